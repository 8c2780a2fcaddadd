"""What the command prints: consoles, tables, words, JSON models and exit statuses."""
