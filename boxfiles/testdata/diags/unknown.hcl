boxx "web" {}

box "api" {
  imgae = "x"
  mount "cache" {
    pth = "/mnt/cache"
  }
}

drive "cache" {}
