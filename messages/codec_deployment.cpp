// Job and plan deployment: the plan as structured data plus the training settings a node
// needs. Decoding checks structure only (positive sizes, known enums, non-negative ids,
// one share per device); runtime::validate_plan, which needs the cluster, runs at the node.
#include "messages/codec.hpp"
#include "messages/wire.hpp"

namespace deepcee::messages {

using detail::checker;

namespace {

static_assert(unsigned(wire::Compression::INT8) == unsigned(runtime::compression::int8));
static_assert(unsigned(wire::ScheduleKind::GREEDY) == unsigned(runtime::schedule_kind::greedy));
static_assert(unsigned(wire::TimeMode::DRY) == unsigned(time_mode::dry));

void write_plan(wire::Plan::Builder w, const runtime::plan& p) {
  w.setStrategy(p.strategy);
  w.setModelName(p.model_name);
  auto model = w.initModel();
  model.setNLayer(p.model.n_layer);
  model.setDModel(p.model.d_model);
  model.setNHead(p.model.n_head);
  model.setContext(p.model.context);
  model.setVocab(p.model.vocab);
  w.setMicroBatchSize(p.micro_batch_size);
  auto pipelines = w.initPipelines(p.pipelines.size());
  for (unsigned i = 0; i < p.pipelines.size(); ++i) {
    const auto& pp = p.pipelines[i];
    auto wp = pipelines[i];
    wp.setMicroBatches(pp.micro_batches);
    wp.setSchedule(static_cast<wire::ScheduleKind>(pp.schedule));
    auto stages = wp.initStages(pp.stages.size());
    for (unsigned s = 0; s < pp.stages.size(); ++s) {
      const auto& st = pp.stages[s];
      auto ws = stages[s];
      detail::fill_list(ws.initDevices(st.devices.size()), st.devices);
      detail::fill_list(ws.initSamples(st.samples.size()), st.samples);
      ws.setFirstLayer(st.first_layer);
      ws.setLastLayer(st.last_layer);
      ws.setSendCompression(static_cast<wire::Compression>(st.send_compression));
    }
  }
  auto excluded = w.initExcluded(p.excluded.size());
  for (unsigned i = 0; i < p.excluded.size(); ++i) {
    excluded[i].setDevice(p.excluded[i].device);
    excluded[i].setReason(p.excluded[i].reason);
  }
}

void write_train(wire::TrainSettings::Builder w, const runtime::train_config& t) {
  auto o = w.initOptimizer();
  o.setLr(t.optimizer.lr);
  o.setMinLrRatio(t.optimizer.min_lr_ratio);
  o.setWarmupSteps(t.optimizer.warmup_steps);
  o.setBeta1(t.optimizer.beta1);
  o.setBeta2(t.optimizer.beta2);
  o.setEps(t.optimizer.eps);
  o.setWeightDecay(t.optimizer.weight_decay);
  o.setGradClip(t.optimizer.grad_clip);
  w.setDataPath(t.data.path.string());
  w.setValFraction(t.data.val_fraction);
  w.setBatch(t.batch);
  w.setSteps(t.steps);
  w.setSeed(t.seed);
  w.setDevice(t.device);
  w.setBf16(t.bf16);
  w.setThreads(t.threads);
  w.setEvalEvery(t.eval_every);
  w.setEvalBatches(t.eval_batches);
  w.setCheckpointEvery(t.checkpoint_every);
  w.setOut(t.out.string());
  w.setMetricsFormat(t.metrics_format);
}

runtime::plan read_plan(wire::Plan::Reader w, checker& c) {
  runtime::plan p;
  p.strategy = detail::text(w.getStrategy());
  p.model_name = detail::text(w.getModelName());
  const auto m = w.getModel();
  p.model = {m.getNLayer(), m.getDModel(), m.getNHead(), m.getContext(), m.getVocab()};
  c.require(p.model.n_layer > 0 && p.model.d_model > 0 && p.model.n_head > 0 &&
                p.model.context > 0 && p.model.vocab > 0,
            "plan.model", "has a size that is not positive");
  p.micro_batch_size = w.getMicroBatchSize();
  c.require(p.micro_batch_size > 0, "plan.micro_batch_size", "is not positive");
  c.require(w.getPipelines().size() > 0, "plan.pipelines", "is empty");
  for (const auto wp : w.getPipelines()) {
    const std::string at = "plan.pipelines[" + std::to_string(p.pipelines.size()) + "]";
    runtime::pipeline_plan pp;
    pp.micro_batches = wp.getMicroBatches();
    c.non_negative(pp.micro_batches, at + ".micro_batches");
    c.known(wp.getSchedule(), wire::ScheduleKind::GREEDY, at + ".schedule");
    pp.schedule = static_cast<runtime::schedule_kind>(wp.getSchedule());
    c.require(wp.getStages().size() > 0, at + ".stages", "is empty");
    for (const auto ws : wp.getStages()) {
      const std::string st_at = at + ".stages[" + std::to_string(pp.stages.size()) + "]";
      runtime::stage_plan st;
      st.devices = detail::to_vector<int>(ws.getDevices());
      st.samples = detail::to_vector<int>(ws.getSamples());
      st.first_layer = ws.getFirstLayer();
      st.last_layer = ws.getLastLayer();
      c.known(ws.getSendCompression(), wire::Compression::INT8, st_at + ".send_compression");
      st.send_compression = static_cast<runtime::compression>(ws.getSendCompression());
      c.require(!st.devices.empty(), st_at + ".devices", "is empty");
      c.require(st.samples.size() == st.devices.size(), st_at + ".samples",
                "does not give one share per device");
      for (int d : st.devices)
        c.non_negative(d, st_at + ".devices");
      for (int s : st.samples)
        c.non_negative(s, st_at + ".samples");
      c.require(st.first_layer >= 0 && st.first_layer < st.last_layer, st_at,
                "has an empty or negative layer range");
      pp.stages.push_back(std::move(st));
    }
    p.pipelines.push_back(std::move(pp));
  }
  for (const auto we : w.getExcluded()) {
    c.non_negative(we.getDevice(), "plan.excluded.device");
    p.excluded.push_back({we.getDevice(), detail::text(we.getReason())});
  }
  return p;
}

runtime::train_config read_train(wire::TrainSettings::Reader w, checker& c) {
  runtime::train_config t;
  const auto o = w.getOptimizer();
  t.optimizer = {o.getLr(),    o.getMinLrRatio(), o.getWarmupSteps(), o.getBeta1(),
                 o.getBeta2(), o.getEps(),        o.getWeightDecay(), o.getGradClip()};
  for (double v : {t.optimizer.lr, t.optimizer.min_lr_ratio, t.optimizer.beta1, t.optimizer.beta2,
                   t.optimizer.eps, t.optimizer.weight_decay, t.optimizer.grad_clip})
    c.require(std::isfinite(v) && v >= 0, "train.optimizer", "has a negative or non-finite value");
  c.non_negative(t.optimizer.warmup_steps, "train.optimizer.warmup_steps");
  t.data.path = detail::text(w.getDataPath());
  t.data.val_fraction = w.getValFraction();
  c.require(t.data.val_fraction >= 0 && t.data.val_fraction < 1, "train.val_fraction",
            "is not in [0, 1)");
  t.batch = w.getBatch();
  t.steps = w.getSteps();
  t.seed = w.getSeed();
  t.device = detail::text(w.getDevice());
  t.bf16 = w.getBf16();
  t.threads = w.getThreads();
  t.eval_every = w.getEvalEvery();
  t.eval_batches = w.getEvalBatches();
  t.checkpoint_every = w.getCheckpointEvery();
  t.out = detail::text(w.getOut());
  t.metrics_format = detail::text(w.getMetricsFormat());
  c.non_negative(t.batch, "train.batch");
  c.non_negative(t.steps, "train.steps");
  c.require(t.threads >= 1, "train.threads", "is below 1");
  c.non_negative(t.eval_every, "train.eval_every");
  c.non_negative(t.eval_batches, "train.eval_batches");
  c.non_negative(t.checkpoint_every, "train.checkpoint_every");
  return t;
}

size_t plan_words(const runtime::plan& p) {
  size_t words = 256 + p.strategy.size() / 8 + p.model_name.size() / 8;
  for (const auto& pp : p.pipelines)
    for (const auto& st : pp.stages)
      words += 8 + st.devices.size() + st.samples.size();
  for (const auto& e : p.excluded)
    words += 4 + e.reason.size() / 8;
  return words;
}

} // namespace

std::vector<uint8_t> encode(const job_deployment& m) {
  const size_t words = plan_words(m.plan) + 128 + m.job.size() / 8 + m.node.size() / 8 +
                       m.train.data.path.native().size() / 8 + m.train.out.native().size() / 8;
  return detail::build(words, [&](wire::Envelope::Builder e) {
    auto d = e.initJobDeployment();
    d.setJob(m.job);
    d.setNode(m.node);
    d.setTimeMode(static_cast<wire::TimeMode>(m.mode));
    write_plan(d.initPlan(), m.plan);
    write_train(d.initTrain(), m.train);
    d.setShapeLinks(m.shape_links);
    d.setClock(m.clock_s);
    d.setRunning(m.running);
    d.setBootId(m.boot_id);
    d.setEpochNs(m.epoch_ns);
  });
}

result<job_deployment> decode_job_deployment(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::job_deployment;
  return detail::read<job_deployment>(
      detail::aligned_copy(bytes), kind, [&](wire::Envelope::Reader e) -> result<job_deployment> {
        const auto d = e.getJobDeployment();
        checker c(kind);
        job_deployment m;
        m.job = detail::text(d.getJob());
        m.node = detail::text(d.getNode());
        c.require(!m.node.empty(), "node", "is empty");
        c.known(d.getTimeMode(), wire::TimeMode::DRY, "time_mode");
        m.mode = static_cast<time_mode>(d.getTimeMode());
        c.require(d.hasPlan(), "plan", "is missing");
        c.require(d.hasTrain(), "train", "is missing");
        if (c.failed())
          return c.finish(std::move(m));
        m.plan = read_plan(d.getPlan(), c);
        m.train = read_train(d.getTrain(), c);
        m.train.model = m.plan.model;
        m.shape_links = d.getShapeLinks();
        m.clock_s = d.getClock();
        m.running = d.getRunning();
        m.boot_id = detail::text(d.getBootId());
        m.epoch_ns = d.getEpochNs();
        c.require(std::isfinite(m.clock_s) && m.clock_s >= 0, "clock", "is not a time");
        return c.finish(std::move(m));
      });
}

std::vector<uint8_t> encode(const deployment_request& m) {
  return detail::build(32 + m.node.size() / 8 + m.cluster.size() / 8,
                       [&](wire::Envelope::Builder e) {
                         auto r = e.initDeploymentRequest();
                         r.setNode(m.node);
                         r.setCluster(m.cluster);
                       });
}

result<deployment_request> decode_deployment_request(std::span<const uint8_t> bytes) {
  const auto kind = message_kind::deployment_request;
  return detail::read<deployment_request>(
      detail::aligned_copy(bytes), kind,
      [&](wire::Envelope::Reader e) -> result<deployment_request> {
        const auto r = e.getDeploymentRequest();
        checker c(kind);
        deployment_request m;
        m.node = detail::text(r.getNode());
        m.cluster = detail::text(r.getCluster());
        c.require(!m.node.empty(), "node", "is empty");
        c.require(!m.cluster.empty(), "cluster", "is empty");
        return c.finish(std::move(m));
      });
}

} // namespace deepcee::messages
