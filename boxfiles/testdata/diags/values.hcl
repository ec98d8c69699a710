policy "p" {
  allow_domains = ["ok.example.com", "bad*.example.com", "-x.example.com"]
  allow_cidrs   = ["10.1.0.0/16", "10.0.0.1/8", "nope", "::1/128"]
}

box "web" {
  type      = "smal"
  ttl       = "soon"
  idle_stop = "later"
}

box "api" {
  type = "gigantic"
  ttl  = "-5s"
}
