"""An example evalgate plug-in: the `echo` target type and the `shouts` scorer type."""
