#!/bin/sh
# test_cluster_partition_server.sh with tablets served one by one
# (tabletd master --spread): the server of one tablet cut off from
# ZooKeeper while its clients still reach it stops answering for that
# tablet, on its own clock, before the master gives the tablet to
# another server once ZooKeeper has expired its session.  Checked and
# printed as there; CLUSTER_ROUNDS likewise.
CLUSTER_SPREAD=1
. "$(dirname "$0")/test_cluster_partition_server.sh"
