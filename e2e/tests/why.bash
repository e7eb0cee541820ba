# Helpers of the why-Pending scenarios (39x: issue 13). Loaded after helpers.bash.

# why_webhook_start NAME: the webhook (validation of batch/v1 Jobs only, with
# the preflight) against the manager and both workers, its caches synced.
why_webhook_start() {
    local d=$MKUEUE_E2E_DIR/webhook-certs
    bed_queues
    wh_start "$1" "$d"
    register_webhooks Validating mkueue-e2e-preflight "$d" \
        "$WH_NS_SELECTOR" '{matchExpressions: [{key: kueue.x-k8s.io/queue-name, operator: Exists}]}' \
        "batch v1 jobs job CREATE,UPDATE"
}

# why_webhook_stop NAME
why_webhook_stop() {
    km delete validatingwebhookconfiguration mkueue-e2e-preflight --ignore-not-found >/dev/null
    stop_component "$1"
}
