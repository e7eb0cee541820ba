#!/usr/bin/env bats
# A Job whose name leaves no room in a label value for its Workload's name
# (63 characters: Kueue's Workload name would be 73). With shortWorkloadNames
# (Kueue's ShortWorkloadNames feature gate) the Workload's name is cut to 63,
# as Kueue cuts it, so the remote job carries it in the label
# kueue.x-k8s.io/prebuilt-workload-name, the one the workers' Kueue v0.17
# reads: the worker's Kueue runs the job under the copy, makes no Workload
# of its own, and the job finishes on the manager. Without the setting
# (Kueue's names, 73 characters here) the name goes into the copy's
# annotation, which v0.17 does not read: a Warning says so.

load helpers
load reconciler

PORT=$((RC_METRICS_BASE + 10))
# 63 characters, the longest a Job's name may be (its pods' job-name label)
NAME=train-llama-finetune-lora-rank-sixteen-epochs-three-seed-42-abc

setup_file() {
    rc_bed_setup
    rc_start rc-long "$PORT" --leader-elect=false --gc-interval 5s --short-workload-names
}

teardown_file() {
    stop_component rc-long
    stop_component rc-long-default
}

setup() {
    NS=$(fresh_ns rclong)
    rc_ns "$NS"
}

teardown() {
    teardown_common
    rc_ns_delete "$NS"
}

# Kueue's name with the gate on: "job-<name>" cut to 57, "-", and the first
# 5 hex digits of sha1("Job\nbatch\n<name>\n<uid>")
kueue_short_name() {
    local uid hash
    uid=$(jp manager -n "$NS" job "$1" -o jsonpath='{.metadata.uid}')
    hash=$(printf 'Job\nbatch\n%s\n%s' "$1" "$uid" | sha1sum | cut -c1-5)
    echo "$(printf 'job-%s' "$1" | cut -c1-57)-$hash"
}

@test "a Job of a 63-character name runs under a Workload name cut to 63, the worker's Kueue using the copy" {
    [ "${#NAME}" = 63 ]
    RC_TTL=300 rc_job "$NS" "$NAME"
    eventually 20 is_ready "$NS" "$NAME"
    wl=$(rc_wl_name "$NS" "$NAME")
    [ "$wl" = "$(kueue_short_name "$NAME")" ]
    [ "${#wl}" = 63 ]
    c=$(rc_cluster_of "$NS" "$NAME")
    eventually 20 is_eq "job.batch/$NAME" rc_remote_jobs "$c" "$NS"
    [ "$(jp "$c" -n "$NS" job "$NAME" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/prebuilt-workload-name}')" = "$wl" ]
    # the worker's Kueue admits the job through the copy: the copy is the
    # one Workload there (a job it did not link would get one of its own)
    eventually 20 is_eq Running jp "$c" -n "$NS" pods -l "job-name=$NAME" -o jsonpath='{.items[0].status.phase}'
    [ "$(k "$c" -n "$NS" get workloads -o name)" = "workload.kueue.x-k8s.io/$wl" ]
    rc_finish_pod "$c" "$NS" "$NAME"
    eventually 20 is_eq True jp manager -n "$NS" job "$NAME" -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}'
    eventually 20 is_eq True rc_cond "$NS" "$NAME" Finished
    eventually 20 no_remote_objects "$NS"
}

@test "without shortWorkloadNames the name goes into the copy's annotation, and a Warning says what v0.17 does" {
    stop_component rc-long
    rc_start rc-long-default $((PORT + 1)) --leader-elect=false --gc-interval 5s
    rc_job "$NS" "$NAME"
    eventually 20 is_ready "$NS" "$NAME"
    wl=$(rc_wl_name "$NS" "$NAME")
    [ "${#wl}" = 73 ]
    c=$(rc_cluster_of "$NS" "$NAME")
    eventually 20 is_eq "job.batch/$NAME" rc_remote_jobs "$c" "$NS"
    [ "$(jp "$c" -n "$NS" job "$NAME" -o jsonpath='{.metadata.annotations.kueue\.x-k8s\.io/prebuilt-workload-name}')" = "$wl" ]
    [ "$(jp "$c" -n "$NS" job "$NAME" -o jsonpath='{.metadata.labels.kueue\.x-k8s\.io/prebuilt-workload-name}')" = "" ]
    eventually 20 is_eq Warning km -n "$NS" get events \
        --field-selector "involvedObject.name=$NAME,reason=LongWorkloadName" -o jsonpath='{.items[0].type}'
}
