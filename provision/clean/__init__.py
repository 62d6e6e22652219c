"""`provision clean` and `provision retire`: take a node back to a verified blank state, or out of the fleet."""
