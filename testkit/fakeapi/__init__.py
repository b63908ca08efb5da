"""A strict fake Kubernetes API server for ConfigMaps, plus sample advice for the publish tests."""
