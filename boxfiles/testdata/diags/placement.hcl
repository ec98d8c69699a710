box "a" {
  placement {
    labels = { ssd = "yes", "Bad Key" = "x" }
  }
  placement {
    labels = { zone = "b" }
  }
}

box "b" {
  placement {
  }
}

box "c" {
  placement {
    labels = ["ssd"]
  }
}
