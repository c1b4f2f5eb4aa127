-- Shared by the cell scripts: a Celery task event published in the script's own step
-- (workers/hooks/events.py builds it with kombu). ARGV from `at`: topic ('' for none), the
-- message with "@body@" where its body goes, and the body with "@attempt@" and "@retries@"
-- to fill in; the body is base64-encoded into the message as kombu's Redis channel does. An
-- empty body: the message is whole already (workers/shared/state.py: TaskEvent.of).
local B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
-- Four digits a call of string.char, from a table of the digits' bytes: 0.12 ms for 700 bytes
-- against 0.20 building each digit as a string (a script runs whole at every call, so no
-- larger table pays for itself).
local function base64(text)
  local digit = {string.byte(B64, 1, 64)}
  local byte, char, floor = string.byte, string.char, math.floor
  local out, n, len = {}, 0, #text
  for i = 1, len - 2, 3 do
    local a, b, c = byte(text, i, i + 2)
    local v = a * 65536 + b * 256 + c
    n = n + 1
    out[n] = char(digit[floor(v / 262144) + 1], digit[floor(v / 4096) % 64 + 1],
                  digit[floor(v / 64) % 64 + 1], digit[v % 64 + 1])
  end
  -- a last group of one or two bytes keeps two or three digits and pads with '='
  local left = len % 3
  if left == 1 then
    local v = byte(text, len) * 65536
    out[n + 1] = char(digit[floor(v / 262144) + 1], digit[floor(v / 4096) % 64 + 1]) .. '=='
  elseif left == 2 then
    local a, b = byte(text, len - 1, len)
    local v = a * 65536 + b * 256
    out[n + 1] = char(digit[floor(v / 262144) + 1], digit[floor(v / 4096) % 64 + 1],
                      digit[floor(v / 64) % 64 + 1]) .. '='
  end
  return table.concat(out)
end
local function publish_event(at, attempt)
  if ARGV[at] == '' then return end
  -- No body: the worker encoded it into the message (it names no attempt it cannot know).
  if ARGV[at + 2] == '' then redis.call('PUBLISH', ARGV[at], ARGV[at + 1]) return end
  local body = string.gsub(ARGV[at + 2], '@attempt@', tostring(attempt))
  body = string.gsub(body, '"@retries@"', tostring(attempt - 1))
  local message = string.gsub(ARGV[at + 1], '@body@', base64(body))
  redis.call('PUBLISH', ARGV[at], message)
end
