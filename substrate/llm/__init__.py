"""Model roles (reasoning-search-service.txt, the model table; LLMIntegration): each role an
optional OpenAI-compatible endpoint reached through neo4j-graphrag's LLM interface, with
retries and backoff, a concurrency cap and token/cost accounting per request."""
