"""The memory inspector at ``/ui`` and the offline Swagger UI at ``/docs`` (``mount.mount_inspector``)."""
