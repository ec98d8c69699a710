drive "cache" {}
drive "cache" {}

policy "p" {}
policy "p" {}

box "web" {}
box "web" {}

locals {
  a = 1
}
locals {
  a = 2
}
