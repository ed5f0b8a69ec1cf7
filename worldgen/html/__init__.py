"""The HTML world model (exact): scene specs rendered by headless Chromium."""
