print("notifier: not built yet")
