"""Calibration: measure TensorFlow thread settings on this node, within a wall-clock budget."""
