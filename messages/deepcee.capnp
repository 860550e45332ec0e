@0x84f8d0942282d309;
# Everything that crosses a node boundary. Every message travels inside an Envelope, so
# a receiver can tell one kind from another and a decoder never reads one kind's bytes as
# another's. Times are seconds (virtual or wall, as the job's time mode says).
#
# Field ordinals are the wire format: add new fields with new ordinals, never renumber.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("deepcee::messages::wire");

enum Compression { none @0; fp16 @1; bf16 @2; int8 @3; }
enum ScheduleKind { gpipe @0; oneFOneB @1; zbH1 @2; zbH2 @3; greedy @4; }
enum TimeMode { wall @0; virtualTime @1; dry @2; }

# Element encoding of a tensor payload. int8 payloads start with one Float32 scale per
# row (absmax / 127), followed by the int8 values, so the scales stay 4-byte aligned.
enum DType { f32 @0; f16 @1; bf16 @2; int8 @3; }
# gradientShare: a stage's gradient sums of layers [firstLayer, lastLayer), for the
# all-reduce among the holders of those layers (rank 1, f32).
enum TensorKind { activation @0; gradient @1; gradientShare @2; }
enum ErrorCode { internal @0; malformedMessage @1; badInput @2; peerDown @3; timeout @4; }

# --- job and plan deployment ----------------------------------------------------------

struct ModelConfig {
  nLayer @0 :Int32;
  dModel @1 :Int32;
  nHead @2 :Int32;
  context @3 :Int32;
  vocab @4 :Int32;
}

struct StagePlan {
  devices @0 :List(Int32);
  samples @1 :List(Int32);
  firstLayer @2 :Int32;
  lastLayer @3 :Int32;
  sendCompression @4 :Compression;
}

struct PipelinePlan {
  stages @0 :List(StagePlan);
  microBatches @1 :Int32;
  schedule @2 :ScheduleKind;
}

struct ExcludedDevice {
  device @0 :Int32;
  reason @1 :Text;
}

struct Plan {
  strategy @0 :Text;
  modelName @1 :Text;
  model @2 :ModelConfig;
  microBatchSize @3 :Int32;
  pipelines @4 :List(PipelinePlan);
  excluded @5 :List(ExcludedDevice);
}

struct OptimizerConfig {
  lr @0 :Float64;
  minLrRatio @1 :Float64;
  warmupSteps @2 :Int32;
  beta1 @3 :Float64;
  beta2 @4 :Float64;
  eps @5 :Float64;
  weightDecay @6 :Float64;
  gradClip @7 :Float64;
}

# runtime::train_config without its model (the plan's model is the one that runs).
struct TrainSettings {
  optimizer @0 :OptimizerConfig;
  dataPath @1 :Text;
  valFraction @2 :Float64;
  batch @3 :Int32;
  steps @4 :Int32;
  seed @5 :UInt64;
  device @6 :Text;
  bf16 @7 :Bool;
  threads @8 :Int32;
  evalEvery @9 :Int32;
  evalBatches @10 :Int32;
  checkpointEvery @11 :Int32;
  out @12 :Text;
  metricsFormat @13 :Text;
}

struct JobDeployment {
  job @0 :Text;
  node @1 :Text;       # the node this deployment is addressed to
  timeMode @2 :TimeMode;
  plan @3 :Plan;
  train @4 :TrainSettings;
  shapeLinks @5 :Bool; # wall time: senders wait as the cluster's link model says
  clock @6 :Float64;   # the coordinator's wall clock (s since its job began) as it answered
  running @7 :Bool;    # the job runs already: a node the plan leaves out joins as a spare
  bootId @8 :Text;     # the coordinator's node's host boot ("" unknown)
  epochNs @9 :Int64;   # its job's zero on that boot's steady clock (ns): a node of the same
                       # boot takes it as its own, exactly
}

# A node of a multi-process job asks the coordinator's node for its deployment, naming the
# cluster as it read it (its fingerprint): only the same cluster may join.
struct DeploymentRequest {
  node @0 :Text;
  cluster @1 :Text;
}

# --- one training step ----------------------------------------------------------------

struct StepStart {
  step @0 :Int64;
  microBatches @1 :List(Int32);  # per pipeline
  learningRate @2 :Float64;
  startTime @3 :Float64;         # when the step starts (virtual time)
}

# The optimizer step after the all-reduce, with the global gradient norm (clipping).
struct OptimizeOrder {
  step @0 :Int64;
  learningRate @1 :Float64;
  gradNorm @2 :Float64;
}

struct Tensor {
  kind @0 :TensorKind;
  step @1 :Int64;
  microBatch @2 :Int32;
  pipeline @3 :Int32;
  stage @4 :Int32;        # the sending stage
  firstSample @5 :Int32;  # offset of this slice within the micro-batch
  sendTime @6 :Float64;   # the sender's (virtual) send time
  shape @7 :List(Int64);  # the fp32 tensor's shape; rows = all but the last dimension
  dtype @8 :DType;
  payload @9 :Data;
  arrivalTime @10 :Float64;  # when its last part arrives, from the sender's link model
  firstLayer @11 :Int32;     # gradientShare only: its layers [firstLayer, lastLayer)
  lastLayer @12 :Int32;
  deliverAt @13 :Int64;      # shaped wall time between processes of one host: the modelled
                             # arrival on the shared steady clock (ns); the receiver holds
                             # the tensor until then. 0: use it when it is there
}

struct LinkSample {
  from @0 :Int32;  # cluster device ids
  to @1 :Int32;
  bytes @2 :Int64;
  start @3 :Float64;    # when the transfer starts to drain (after queueing)
  end @4 :Float64;      # when its last byte arrives
  step @5 :Int64;
  kind @6 :TensorKind;
  microBatch @7 :Int32;
  pipeline @8 :Int32;
  stage @9 :Int32;      # the sending stage
  link @10 :Int32;      # the FIFO resource (device pair, or WAN pipe between regions)
  sendTime @11 :Float64;
  drained @12 :Float64; # when its last byte left the sender
}

struct StageStats {
  pipeline @0 :Int32;
  stage @1 :Int32;
  computeBusy @2 :Float64;
  idle @3 :Float64;
  bytesSent @4 :Int64;
  peakMemory @5 :Int64;
  lossSum @6 :Float64;   # last stage only
  tokenCount @7 :Int64;  # last stage only
}

struct OpRecord {
  kind @0 :Int32;   # runtime::op_kind
  microBatch @1 :Int32;
  start @2 :Float64;
  end @3 :Float64;
}

# One stage's end of a step (or its failure), to the coordinator.
struct StageReport {
  step @0 :Int64;
  pipeline @1 :Int32;
  stage @2 :Int32;
  endTime @3 :Float64;
  lossSum @4 :Float64;         # last stages: sum of per-token losses
  gradSumSquares @5 :Float64;  # pipeline 0's stages: of the reduced gradients
  ops @6 :List(OpRecord);
  dropped @7 :Int64;           # malformed messages the stage dropped so far
  error @8 :Text;              # set instead when a handler failed
  code @9 :ErrorCode;          # what kind of failure, with error
}

# A node of a multi-process job announces its stages (the actor handles travel beside it).
struct NodeJoin {
  node @0 :Text;
  job @1 :Text;                # fingerprint of the cluster as the node read it
  stages @2 :List(Int32);      # flat stage indices
  devices @3 :List(Int32);     # device slots of its devices that serve other nodes' stages
}

struct StepStats {
  step @0 :Int64;
  stages @1 :List(StageStats);
}

struct Rebalance {
  microBatches @0 :List(Int32);  # per pipeline
  effectiveStep @1 :Int64;
  samples @2 :List(List(Int32)); # per stage (flat order), per device; empty: the plan's
  compressions @3 :List(Compression); # per stage (flat order); empty: the plan's
}

struct Heartbeat {
  node @0 :Text;
  sequence @1 :UInt64;
  time @2 :Float64;
}

struct Error {
  node @0 :Text;
  code @1 :ErrorCode;
  message @2 :Text;
}

# Conservative synchronisation of a link several stages send on (actors/pipe_actor.hpp).
struct PipeRequest {
  step @0 :Int64;
  role @1 :UInt8;      # 0 activation, 1 gradient
  pipeline @2 :Int32;
  stage @3 :Int32;     # the sender
  microBatch @4 :Int32;
  part @5 :Int32;      # index into the sender's transfer parts of that role
  sendTime @6 :Float64;
}

struct SendHorizon {
  step @0 :Int64;
  time @1 :Float64;    # the sender's next transfers leave at this time or later
  pipeline @2 :Int32;
  stage @3 :Int32;
  role @4 :Int8;      # 0 activation, 1 gradient, -1 every role (a promise to a pipe)
}

struct PipeArrival {
  step @0 :Int64;
  role @1 :UInt8;
  pipeline @2 :Int32;
  stage @3 :Int32;     # the sender
  microBatch @4 :Int32;
  arrivalTime @5 :Float64;
}

# Checkpoints (actors/checkpoint_messages.hpp): one parameter of a stage with its AdamW
# moments, as little-endian Float32 bytes, shape's product values each (a Data field holds
# at most 512 MiB - 1: a larger tensor is refused when encoding).
struct ParameterTensor {
  name @0 :Text;           # Hugging Face GPT-2 name
  shape @1 :List(Int64);
  value @2 :Data;
  expAvg @3 :Data;         # empty, with expAvgSq, when a checkpoint file has no moments
  expAvgSq @4 :Data;
}

# A stage's layers after `step` optimizer steps (a snapshot), or to load before step + 1
# (a restore).
struct StageSnapshot {
  step @0 :Int64;
  pipeline @1 :Int32;
  stage @2 :Int32;
  params @3 :List(ParameterTensor);  # in model order
  source @4 :Text;                   # restore: the checkpoint file, named by errors
}

# A stage's device on another node than its stage (actors/device_messages.hpp). Float32
# values travel as little-endian bytes in Data fields (at most 512 MiB - 1 each: a larger
# one is refused when encoding).

# One op on some samples of a micro-batch, with the rows the device reads.
struct DeviceRows {
  kind @0 :Int32;            # runtime::op_kind: 0 F, 1 B, 2 W
  microBatch @1 :Int32;
  firstSample @2 :Int32;     # in the global batch
  samples @3 :Int32;         # at least 1
  lossScale @4 :Float32;     # the last stage's F: 1 / tokens of the global batch
  tokens @5 :List(Int32);    # the first stage's F: [samples, T], else empty
  targets @6 :List(Int32);   # the last stage's F: [samples, T], else empty
  input @7 :Data;            # Float32 [samples, T, C], or empty
  outputValues @8 :Int64;    # what the answer carries: samples * T * C, or 0
  recompute @9 :Bool;        # F: keep only the input until B, which runs F again first
}

# A DeviceRows' answer: the last stage's F loss sum (else 0) and the rows written.
struct DeviceOutput {
  loss @0 :Float64;
  output @1 :Data;           # Float32, DeviceRows.outputValues of them
  computeS @2 :Float64;      # seconds the device computed the op, by its own clock
}

# One round of a ring all-reduce of a stage's gradients, to the next device of the ring.
struct RingChunk {
  step @0 :Int64;
  round @1 :Int32;
  values @2 :Data;           # Float32
  deliverAt @3 :Int64;       # as Tensor's: the modelled arrival on the shared steady clock
}

# Gradients to set on a device, or a device's answer to a reduce (empty but on rank 0).
struct GradientValues {
  step @0 :Int64;
  values @1 :Data;           # Float32
  offset @2 :Int64;          # where `values` begin among the stage's gradients: a stage
                             # too large for one message sends them in pieces, in order
}

# A running job's fluctuation and fault script (runtime/cluster/link_timeline.hpp), sent by
# the coordinator to every stage and pipe at a step boundary once events were injected.
struct ScriptEndpoint {
  scope @0 :ScriptScope;
  index @1 :Int32;           # the cluster's region, node or device index
}

enum ScriptScope {
  region @0;
  node @1;
  device @2;
}

enum NodeAction {
  stop @0;
  resume @1;
  kill @2;
  partition @3;
  heal @4;
}

struct ScriptLinkChange {
  atS @0 :Float64;
  atStep @1 :Int32 = -1;     # -1: at atS; else when that step (from 0) starts
  a @2 :ScriptEndpoint;
  b @3 :ScriptEndpoint;      # unused with anyPeer
  anyPeer @4 :Bool;
  # Each quantity counts only where its flag is set (a change leaves the others alone).
  bandwidthBps @5 :Float64;
  hasBandwidthBps @6 :Bool;
  latencyS @7 :Float64;
  hasLatencyS @8 :Bool;
  bandwidthScale @9 :Float64;
  hasBandwidthScale @10 :Bool;
  latencyScale @11 :Float64;
  hasLatencyScale @12 :Bool;
  jitter @13 :Float64;
  hasJitter @14 :Bool;
  seed @15 :UInt64;
  line @16 :Int64;           # where its script file gave it, for the logs
}

struct ScriptDeviceChange {
  atS @0 :Float64;
  atStep @1 :Int32 = -1;
  device @2 :Int32;
  slowdown @3 :Float64;
  line @4 :Int64;
}

struct ScriptNodeChange {
  atS @0 :Float64;
  atStep @1 :Int32 = -1;
  node @2 :Int32;
  action @3 :NodeAction;
  line @4 :Int64;
}

struct ScriptUpdate {
  step @0 :Int64;            # it replaces the receiver's script before this step starts
  links @1 :List(ScriptLinkChange);
  devices @2 :List(ScriptDeviceChange);
  nodes @3 :List(ScriptNodeChange);
}

struct Envelope {
  union {
    jobDeployment @0 :JobDeployment;
    stepStart @1 :StepStart;
    tensor @2 :Tensor;
    linkSample @3 :LinkSample;
    stepStats @4 :StepStats;
    rebalance @5 :Rebalance;
    heartbeat @6 :Heartbeat;
    error @7 :Error;
    optimizeOrder @8 :OptimizeOrder;
    stageReport @9 :StageReport;
    nodeJoin @10 :NodeJoin;
    pipeRequest @11 :PipeRequest;
    sendHorizon @12 :SendHorizon;
    pipeArrival @13 :PipeArrival;
    stageSnapshot @14 :StageSnapshot;
    deploymentRequest @15 :DeploymentRequest;
    deviceRows @16 :DeviceRows;
    deviceOutput @17 :DeviceOutput;
    ringChunk @18 :RingChunk;
    gradientValues @19 :GradientValues;
    scriptUpdate @20 :ScriptUpdate;
  }
}
