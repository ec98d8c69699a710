image "Tools" {
  tag = "-1"
}

image "ok" {
  context    = "/abs"
  dockerfile = "../Dockerfile"
  policy     = "some-policy"
}

image "away" {
  context = "../.."
}

image "gone" {
  context = "./nothere"
}

box "web" {
  image = image.tool
}
