project = "My Project"

box "Web_1" {}
drive "-cache" {}
policy "allow-all" {}
