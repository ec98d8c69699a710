box "a" {
  mount "s3://Bad_Bucket/x" {
    to     = "/data"
    secret = "K"
  }
  mount "s3://good-bucket" {
    to     = "/etc/data"
    secret = "K"
  }
  mount "s3://good-bucket/p" {
    to     = "/data2"
    secret = "not a name"
  }
  mount "s3://good-bucket/q" {
    to       = "/data3"
    secret   = "K"
    endpoint = "ftp://store"
  }
  mount "s3://good-bucket/../up" {
    to     = "/data4"
    secret = "K"
  }
  mount "s3://good-bucket/r" {
    secret = "K"
  }
  mount "s3://good-bucket/s" {
    to     = "/data5"
    secret = "K"
  }
  mount "s3://good-bucket/t" {
    to     = "/data5/inner"
    secret = "K"
  }
}
