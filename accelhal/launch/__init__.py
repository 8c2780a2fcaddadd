"""Who started this process: the launchers accelhal knows, their variables, Slurm host lists."""
