x = <<-EOT
		indented
	  mixed

    EOT
y = 1