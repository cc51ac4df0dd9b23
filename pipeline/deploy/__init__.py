"""Deployment: exported system folders (manifest, loading with hash checks) and raw-text translation through a
system's whole chain in one process. No Luigi here (tasks/export.py writes the folders)."""
