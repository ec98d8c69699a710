project = "demo"

variable "env" {
  type    = string
  default = "test"
}

locals {
  base = "paddock/box:latest"
}

policy "registries" {
  allow_domains = ["packages.example.org", "*.github.com"]
  allow_cidrs   = ["140.82.112.0/20"]
}

drive "npm-cache" {
  size   = "10GiB"
  labels = { team = "web" }
}

box "web" {
  type      = "medium"
  image     = local.base
  ttl       = "1h"
  idle_stop = "30m"
  policy    = policy.registries
  agent     = "claude"
  env       = { NODE_ENV = var.env, ROOT = path.root, UPPER = upper(var.env) }
  mount "npm-cache" {
    path     = "/mnt/npm-cache"
    readonly = true
  }
  push "./src" {
    to = "/config/project"
  }
  setup   = ["npm ci"]
  desktop = true
}

box "worker" {
  policy = "deny-all"
  files  = { "./src" = "/config/src", "good.hcl" = "/config/boxfile" }
  placement {
    labels = { ssd = "yes", zone = var.env == "prod" ? "b" : "a" }
  }
  mount "s3://team-data/reports/2026" {
    to        = "/data"
    read_only = true
    secret    = "REPORTS_KEYS"
    endpoint  = "https://store.example.org:9000"
  }
  mount "s3://scratch" {
    to     = "/mnt/scratch"
    secret = "REPORTS_KEYS"
  }
}

image "tools" {
  context    = "./src"
  dockerfile = "Dockerfile"
  tag        = "1"
  policy     = "deny-all"
}

box "builder" {
  image = image.tools
}
