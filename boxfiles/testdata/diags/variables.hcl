variable "size" {
  type    = string
  default = "huge"
  validation {
    condition     = contains(["small", "large"], var.size)
    error_message = "size must be small or large."
  }
}

variable "count" {
  type = number
}

box "web" {
  type = var.size
}
