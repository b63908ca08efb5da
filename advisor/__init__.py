"""tf-thread-advisor: measure and publish TensorFlow CPU thread settings for Kubernetes pods."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("tf-thread-advisor")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
