// The notifier service; filled in by its issue.
