-- ARGV: name, instance, ttl (s), seen (ISO). 0: this instance no longer holds the name.
if renew(ARGV[1], ARGV[2], ARGV[3], ARGV[4]) then return 1 end
return 0
