# Substrate Reasoning: the policy the gateway asks for every request when OPA_URL is set
# (POST /v1/data/substrate/authz with {"input": {principal, action, tenant, clearance,
# resource}}). It mirrors the built-in rules of substrate/security/policy.py:
#   - the tenant is in the principal's tenants (or it holds "*");
#   - the clearance is at most the principal's max_clearance;
#   - the action's role is held: read:* reader, write:* reviewer, admin:* admin
#     (admin implies reviewer implies reader);
#   - every PII kind is redacted from what is read.
# The answer: {"allow": bool, "reason": str, "redact": [kind, ...]}.
package substrate.authz

import rego.v1

levels := ["public", "internal", "confidential", "restricted"]

roles := ["reader", "reviewer", "admin"]

action_roles := {"read": "reader", "write": "reviewer", "admin": "admin"}

pii_kinds := [
	"email", "phone", "ssn", "nino", "iban", "card", "private_key", "jwt", "aws_key",
	"api_key", "password", "token",
]

# allowed only when every condition holds (never "when no denial fired": a denial rule whose
# input is missing is undefined, not true)
default allow := false

allow if {
	tenant_granted
	clearance_granted
	role_held
}

redact := pii_kinds

default reason := "denied: the input lacks a principal, tenant, clearance or action"

reason := sprintf("%s of tenant %q at %q", [needed_role, input.tenant, input.clearance]) if allow

reason := concat("; ", sort(denials)) if {
	not allow
	count(denials) > 0
}

needed_role := action_roles[split(input.action, ":")[0]]

default needed_role := "admin"

rank(list, x) := i if list[i] == x

tenant_granted if "*" in input.principal.tenants

tenant_granted if input.tenant in input.principal.tenants

role_held if {
	some r in input.principal.roles
	rank(roles, r) >= rank(roles, needed_role)
}

denials contains sprintf("tenant %q is outside the grant", [input.tenant]) if not tenant_granted

clearance_granted if {
	input.clearance in levels
	rank(levels, input.clearance) <= rank(levels, input.principal.max_clearance)
}

denials contains sprintf("unknown clearance %q", [input.clearance]) if {
	not input.clearance in levels
}

denials contains sprintf("clearance %q above the grant (%q)", [input.clearance, input.principal.max_clearance]) if {
	rank(levels, input.clearance) > rank(levels, input.principal.max_clearance)
}

denials contains sprintf("%s needs the %q role", [input.action, needed_role]) if not role_held
