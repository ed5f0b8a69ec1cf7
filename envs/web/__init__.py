"""Web environments: Playwright-driven Chromium, MiniWoB++ and custom web tasks."""
