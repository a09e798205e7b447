"""Who is calling and what they may see: principals, grants, policy decisions and their audit."""
