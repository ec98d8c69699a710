drive "cache" {}
drive "data" {}

box "web" {
  mount "cache" { path = "/etc/cache" }
  mount "data" { path = "/mnt/../etc" }
}

box "api" {
  mount "cache" { path = "/mnt/shared" }
  mount "data" { path = "/mnt/shared" }
  push "." { to = "relative/path" }
}
