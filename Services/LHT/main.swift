print("lht: not built yet")
