box "web" {
  push "./nowhere" { to = "/config/x" }
  files = {
    "."         = "config/src"
    "./missing" = "/config/missing"
  }
}
