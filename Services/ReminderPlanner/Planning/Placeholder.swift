// Filled in by the occurrence work.
