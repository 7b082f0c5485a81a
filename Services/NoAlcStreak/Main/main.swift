print("noalc-streak: not built yet")
