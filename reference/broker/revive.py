"""The broker's revive (RocketMQ 5.x PopReviveService, timer wheel on).

Checkpoints and acks are timer messages of the revive log: a checkpoint is delivered to the
revive queue at its revive time less ackTimeInterval, an ack at its pop time plus invisible
time. Every reviveInterval the service reads what was delivered, sets the bits the acks name,
and revives each checkpoint whose revive time lies more than ackTimeInterval + 1 s behind the
scan's end time (the latest delivery time it read, or now when nothing new came for 3 s): every
message of it not acked is written into the group's pop retry topic (queue 0), its reconsume
times one more (the same for a suspended checkpoint), and a fully acked one is dropped. The
reference keeps checkpoints in a table (reference.broker.pop) and revives each once now has
passed its revive time by that margin, at the service's next run.

A read of a checkpoint's message may fail (EscapeBridge.getMessageAsync completes exceptionally:
the explorer's fault revive_read_failed, a scenario's fail_revive_reads step). Every release then
loses the message: the revive callback throws before rePutCK, and the revive offset was already
committed past the checkpoint (#10985). With the profile's revive_read_failure_reputs (the
proposed fix) the checkpoint of that one offset is re-put, its invisible time raised (rePutCK).

With the profile's pop_revive_skips_last_epoch (5.0.0 to 5.2.0) a message read for a checkpoint
whose store time is later than the checkpoint's pop time is skipped and counted done ("skip ck
from last epoch"): no retry copy, nothing more of it. A pop that read late (reference.broker.pop)
hands out such a message, and if it is not acked it is lost (#7914).

The message is read as getBizMessage reads it: one message from the checkpoint's offset on. Where
retention has deleted that offset's commit-log data and the consume queue is not corrected yet
(reference.broker.retention), the read returns a later offset's message, and every release revives
that one in the checkpoint's place (#7724): the message_revived event names the checkpoint's offset
and the id of the message put back. With the profile's revive_checks_read_offset (PR #7739) such a
read counts as not found.
"""
from __future__ import annotations

from rocketspec.rocketmq.pop import (POP_RETRY_QUEUE_NUM, REVIVE_INTERVAL, REVIVE_MARGIN, reput_invisible_time,
                                     revive_skips_last_epoch, revive_target, revived_reconsume_times)

from ..footprint import footprint
from ..message import Message


class PopReviveService:
    def __init__(self, broker):
        self.b = broker
        self.sim = broker.sim
        self.read_failures = 0          # reads still to fail (a scenario's fail_revive_reads step)
        self.read_failure_rate = 0.0    # choice point revive_read_fails (the explorer's fault; 0: never asked)

    def start(self) -> None:
        self.sim.every(REVIVE_INTERVAL, REVIVE_INTERVAL, self.revive, owner=self.b.proc)

    # with no checkpoint waiting the scan changes nothing: it only reads that there is none
    @footprint(lambda self: ({("pop", self.b.name, "checkpoints")}, set()) if not self.b.pop.checkpoints else None)
    def revive(self) -> None:
        pop = self.b.pop
        if not pop.checkpoints:
            return
        now = self.sim.now
        # in revive-log order: the order the checkpoints were written
        due = [ck for ck in pop.checkpoints.values() if now - ck.revive_time > REVIVE_MARGIN]
        for ck in due:
            del pop.checkpoints[ck.key]
            for off in ck.offsets:
                if off in ck.acked:
                    continue
                if self._read_fails():
                    if self.b.profile.revive_read_failure_reputs:
                        self._reput(ck, off)
                    # else: nothing revives the offset again (#10985)
                    continue
                self._revive_one(ck, off)

    def _read_fails(self) -> bool:
        if self.read_failures > 0:
            self.read_failures -= 1
            return True
        return bool(self.read_failure_rate) and self.sim.chooser.chance("revive_read_fails", self.read_failure_rate)

    def _reput(self, ck, offset: int) -> None:
        """rePutCK: a checkpoint of the one offset, same pop time, its invisible time raised by the
        next rewrite interval (the revive time has passed), rePutTimes one more."""
        from .pop import Checkpoint

        b, sim = self.b, self.sim
        new = Checkpoint(ck.group, ck.topic, ck.queue, offset, ck.pop_time,
                         reput_invisible_time(ck.invisible_ms, ck.reput_times), [offset], ck.revive_qid, ck.client,
                         reput_times=ck.reput_times + 1)
        b.pop.checkpoints[new.key] = new
        sim.emit("pop_checkpoint_written", group=new.group, topic=new.topic, broker=b.name, queue=new.queue,
                 ck_offset=offset, offsets=[offset], pop_time=new.pop_time, invisible_time=new.invisible_ms,
                 revive_qid=new.revive_qid, cause="reput", store="revive_log", reput_times=new.reput_times)
        cq = b.store.consume_queue(ck.topic, ck.queue, create=False)
        stored = cq.messages[offset] if cq is not None and cq.min_offset <= offset < cq.max_offset else None
        sim.emit("message_revived", group=ck.group, topic=ck.topic, broker=b.name, queue=ck.queue, offset=offset,
                 msg_id=stored.msg_id if stored is not None else "", pop_time=ck.pop_time, outcome="reput",
                 reput_times=new.reput_times)

    def _read(self, ck, offset: int):
        """getBizMessage: one message read from the queue at `offset` on (getMessage with
        maxMsgNums 1). An entry whose commit-log data is gone is passed over (reference.broker.
        retention), so the message read may lie at a later offset."""
        got = self.b.store.get_message(ck.topic, ck.queue, offset, 1, _match_all)
        return got.messages[0] if got.messages else None

    def _revive_one(self, ck, offset: int) -> None:
        """reviveRetry: the message, read from its queue, copied into the pop retry topic."""
        b, sim = self.b, self.sim
        stored = self._read(ck, offset)
        if stored is not None and stored.offset != offset and b.profile.revive_checks_read_offset:
            stored = None   # the proposed fix of #7724: another offset's message counts as not found
        if stored is None:
            # getBizMessage found nothing (gone from the store): nothing to put back
            sim.emit("message_revived", group=ck.group, topic=ck.topic, broker=b.name, queue=ck.queue, offset=offset,
                     msg_id="", pop_time=ck.pop_time, outcome="skipped")
            return
        if revive_skips_last_epoch(ck.pop_time, stored.store_ts, b.profile.pop_revive_skips_last_epoch):
            # "skip ck from last epoch": only a log line; the offset counts as revived (#7914)
            return
        put_back(b, ck.group, ck.topic, ck.queue, offset, ck.pop_time, stored, ck.suspend,
                 **({"reput_times": ck.reput_times} if ck.reput_times else {}))


def put_back(b, group: str, topic: str, queue: int, offset: int, pop_time: int, stored, suspend: bool,
             **extra) -> None:
    """reviveRetry: `stored`, the message read for the checkpoint (or KV record) of `group` at
    `offset` of the queue, copied into the group's pop retry topic (queue 0) with one more
    reconsumption unless a suspend's; the topic is created on first use, the group's offsets there
    at 0 (addRetryTopicIfNotExist, initPopRetryOffset). The copy is stored without a message_stored
    event: message_revived says where it went."""
    sim = b.sim
    target = revive_target(topic, group)
    if b.topics.get(target) is None:
        b.create_topic(target, POP_RETRY_QUEUE_NUM)
        for q in range(POP_RETRY_QUEUE_NUM):
            if b.offsets.query(group, target, q) < 0:
                b.offsets.commit(group, target, q, 0, source="pop")
    copy = Message(topic=target, queue=0, tags=stored.tags, tags_code=stored.tags_code, keys=stored.keys,
                   props=stored.props, body_size=stored.body_size,
                   reconsume_times=revived_reconsume_times(stored.reconsume_times, suspend),
                   origin_msg_id=stored.origin_msg_id, retry_topic=stored.retry_topic or topic)
    copy.broker = b.name
    copy.msg_id = b._new_id()
    copy.store_ts = sim.now
    b.index[copy.msg_id] = copy
    b.store.append(copy)
    sim.emit("message_revived", group=group, topic=topic, broker=b.name, queue=queue, offset=offset,
             msg_id=stored.msg_id, pop_time=pop_time, outcome="retry", origin_msg_id=stored.origin_msg_id,
             target_topic=target, target_queue=copy.queue, target_offset=copy.offset, target_msg_id=copy.msg_id,
             reconsume_times=copy.reconsume_times, **extra)
    b._notify_arriving(target, copy.queue)
    b.pop.notify_arriving(target)


def _match_all(m) -> bool:
    return True
