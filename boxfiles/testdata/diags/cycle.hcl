locals {
  a = "${local.b}-x"
  b = local.c
  c = local.a
  d = "fine"
}

box "web" {
  image = local.d
}
