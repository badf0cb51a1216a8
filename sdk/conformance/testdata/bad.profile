# A line the kit does not understand.
option direct_mapping=0
bogus line
