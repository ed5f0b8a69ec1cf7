"""OSWorld-style GUI env: tasks, action parsing, evaluation."""
