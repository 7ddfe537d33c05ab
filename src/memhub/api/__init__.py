"""The HTTP gateway: wire-compatible with the TencentDB Agent Memory v3 API."""

from memhub.api.app import create_app

__all__ = ["create_app"]
