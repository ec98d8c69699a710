box "web" {
  type = "small"
  ttl = 
}
