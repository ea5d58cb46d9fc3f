"""A Claude Code task list (`claude-tasks://LIST`) used as a work-queue room."""
