"""The wikis and conversations of the composer's test world (tests/context/kit.py builds them over HTTP).

- Help center: the tenant's system knowledge (reserved team `__system__`, made with the gateway key).
- Team handbook and Standards library: workspace knowledge of team `support` (bound to no agent).
- Support playbook: bound to the agent `support-bot`, so it is that agent's knowledge; it overrides the handbook's
  refund window for enterprise customers (the conflict case).
- Bob notes: another team's wiki, never visible to the `support` team.
"""

from __future__ import annotations

HELP_CENTER = {
    "accounts/api-keys.md": """---
title: Creating API keys
summary: How to create, copy and revoke a personal API key.
tags: [api key, key, token, credentials]
---
# Creating API keys

Open **Settings → Keys** and click **New key**. The key is shown once: copy it into your agent's environment
(`MEMHUB_USER_KEY`). Revoke a key from the same page; agents using it stop working at once.
""",
    "teams/invite-members.md": """---
title: Inviting team members
summary: Team admins invite members and choose their role.
tags: [invite, members, team, role]
---
# Inviting team members

Team admins open **Team → Members** and click **Invite**. Pick the role: member, reviewer or admin.
""",
    "teams/invite-members-zh.md": """---
title: 邀请团队成员
summary: 团队管理员邀请成员并选择角色。
tags: [邀请, 成员, 团队, 角色]
---
# 邀请团队成员

团队管理员打开 **团队 → 成员**，点击 **邀请**，再选择角色：成员、评审或管理员。
""",
}

_DEPLOY_STEPS = "\n\n".join(
    f"## Step {n}: {title}\n\n"
    + " ".join(
        f"{title} check {i}: confirm the {title.lower()} state on every node before you continue with the deploy."
        for i in range(1, 9)
    )
    for n, title in enumerate(["Freeze", "Build", "Canary", "Rollout", "Verify", "Roll back"], start=1)
)

TEAM_HANDBOOK = {
    "handbook.md": """---
title: Team handbook overview
summary: What the support team's handbook covers and who maintains it.
tags: [handbook, overview]
---
# Team handbook overview

The handbook is maintained by the support leads; propose changes in the #handbook channel.
""",
    "payments/refunds.md": """---
title: Refunds
summary: Refund window and how to issue a refund.
tags: [refund, refunds, 退款]
---
# Refunds

Customers may request a refund within **30 days** of purchase. Issue it from the billing console; the money
returns to the original payment method within 5 business days.
""",
    "engineering/frontend-style.md": """---
title: Front-end component style
summary: Rules for React components, hooks and CSS modules.
tags: [frontend, component, react]
paths: ["**/*.tsx", "web/**"]
---
# Front-end component style

One component per file; hooks start with `use`; styles live in a CSS module next to the component.
""",
    "engineering/deploy-runbook.md": f"""---
title: Deploy runbook
summary: How to deploy, verify and roll back the support portal.
tags: [deploy, release, rollback, roll back]
---
# Deploy runbook

Deploys run on weekdays before 15:00 only.

{_DEPLOY_STEPS}
""",
}

STANDARDS_LIBRARY = {
    "standards/password-current.md": """---
title: Password standard
summary: Password length and MFA rules.
tags: [password, security]
kind: standard
lifecycle: published
standard:
  number: SEC-7-2024
  effective_from: 2024-01-01
---
# Password standard

Passwords have at least 14 characters; every admin account uses MFA.
""",
    "standards/password-draft.md": """---
title: Password standard (draft revision)
summary: Proposed passkey-only sign-in, under review.
tags: [password, security, passkey]
kind: standard
lifecycle: draft
standard:
  number: SEC-9-2026
---
# Password standard (draft revision)

Proposed: passkeys only, no passwords.
""",
    "standards/password-2019.md": """---
title: Password standard (2019 edition)
summary: The superseded 2019 password rules.
tags: [password, security]
kind: standard
lifecycle: published
standard:
  number: SEC-7-2019
  effective_from: 2019-01-01
  effective_to: 2023-12-31
---
# Password standard (2019 edition)

Passwords have at least 8 characters.
""",
    "standards/password-2099.md": """---
title: Password standard (2099 edition)
summary: Quantum-safe passphrases, effective in 2099.
tags: [password, security]
kind: standard
lifecycle: published
standard:
  number: SEC-7-2099
  effective_from: 2099-01-01
---
# Password standard (2099 edition)

Passphrases are quantum-safe.
""",
    "faq/security-faq.md": """---
title: Security FAQ
summary: Forgotten passwords and suspicious sign-ins.
tags: [password, faq, security]
---
# Security FAQ

Forgot your password? Use the reset link on the sign-in page; support never asks for it.
""",
}

SUPPORT_PLAYBOOK = {
    "refunds-enterprise.md": """---
title: Enterprise refund override
summary: The refund window for enterprise customers.
tags: [refund, refunds, enterprise]
---
# Enterprise refund override

For **enterprise** customers the refund window is **14 days**; this overrides the team handbook.
""",
    "tone.md": """---
title: Reply tone
summary: How the support bot words its replies.
tags: [tone, reply]
---
# Reply tone

Short sentences, no jargon, always offer a next step.
""",
}

BOB_NOTES = {
    "refunds.md": """---
title: Bob's refund notes
tags: [refund, refunds]
---
# Bob's refund notes

Refunds of team other take 90 days.
""",
}

SESSION = "s-1"
SESSION_MESSAGES = [
    ("user", "Hi, a customer wants a refund for an annual plan."),
    ("assistant", "Sure. Which plan is it, and when was it bought?"),
    ("user", "Enterprise plan, bought 20 days ago."),
]
LONG_SESSION = "s-long"
LONG_MESSAGES = [
    ("user" if i % 2 == 0 else "assistant", f"Message {i:02d}: " + "the customer asked about invoices again. " * 3)
    for i in range(30)
]
