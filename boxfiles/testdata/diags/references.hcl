variable "region" {
  default = "eu"
}

box "web" {
  image  = var.regoin
  policy = policy.registires
  agent  = local.nothing
  env    = { A = drive.nope.name }
  mount "cahce" {}
}

box "api" {
  policy = "registries"
}

policy "registries" {}
drive "cache" {}
