"""The hub's trio state: the prompt registry (registry) and the activity stream
(activity), the one place prompts and events live while the hub runs."""
