"""Text formats shared by the server and the SDK, with no dependency on either: the sanitize rules applied to
captured turns, the fences that keep untrusted text inert inside a prompt, and the scene-navigation block of a
persona. The SDK ships them to agents; the server applies the same rules to what it stores and composes."""
