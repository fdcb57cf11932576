"""Work over a whole tenant: creating one, listing them (operators), changing its plan."""
