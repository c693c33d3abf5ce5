# triohooks relay, fast path in bash: what `triohooks <agent> install` runs per agent event.
#
#   bash relay.sh AGENT PYTHON < hook-input.json
#
# Forwards the agent's hook input to a running `triohooks serve` (found through
# <state dir>/serve.addr: "host port token-file") with bash's own /dev/tcp, prints the answer
# body and exits 0 -- a bash start-up instead of a Python one. Anything else (no server, a
# refused connection, a non-200 answer, a short body) hands the same input to the Python relay
# (relay.py beside this file, run by PYTHON), which runs the hooks itself and fails closed.
# Keep it to bash builtins: every process it starts costs what it is here to save.

agent=$1
python=${2:-python3}
here=${BASH_SOURCE[0]%/*}
LC_ALL=C  # lengths in bytes
body=$(cat; printf x)
body=${body%x}

fallback() {
    exec "$python" -I -S -c "import sys;sys.path[:0]=[sys.argv.pop(1)];import relay;sys.exit(relay.main(sys.argv[1:]))" \
        "$here" "$agent" <<<"$body"
}

if [[ -n ${TRIOHOOKS_STATE_DIR:-} ]]; then
    state=$TRIOHOOKS_STATE_DIR
elif [[ -n ${XDG_STATE_HOME// /} ]]; then
    state=${XDG_STATE_HOME%/}/triohooks
else
    state=${HOME%/}/.local/state/triohooks
fi

{ read -r host port tokfile <"$state/serve.addr" && read -r token <"$tokfile"; } 2>/dev/null || fallback
[[ -n $token && -n $port ]] || fallback
{ exec 3<>"/dev/tcp/$host/$port"; } 2>/dev/null || fallback
printf 'POST /%s/v1/hook HTTP/1.1\r\nHost: %s:%s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
    "$agent" "$host" "$port" "$token" "${#body}" "$body" >&3 2>/dev/null || fallback
IFS= read -r status <&3 || fallback
[[ $status == "HTTP/1.1 200 "* ]] || fallback
length=
while IFS= read -r line <&3; do
    line=${line%$'\r'}
    [[ -z $line ]] && break
    if [[ ${line,,} == content-length:* ]]; then
        length=${line#*:}
        length=${length// /}
    fi
done
IFS= read -r -d '' -u 3 answer
[[ -n $length && ${#answer} -eq $length ]] || fallback
printf '%s\n' "$answer"
exit 0
