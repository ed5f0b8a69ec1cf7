"""Tests for envs.osworld."""
