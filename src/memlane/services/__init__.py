"""The services behind the ``Memory`` facade, one per concern, each typed by the store capabilities it uses.

``assemble`` builds them over one store; ``Scope`` is one user within one tenant, checked once per call.
"""
