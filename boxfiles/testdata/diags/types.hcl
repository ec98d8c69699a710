box "web" {
  env     = "NODE_ENV=test"
  desktop = "maybe"
  setup   = "npm ci"
}
