// Step logs as common trainers print them: per-step lines, means over batches, tqdm bars,
// Trainer's summary and torchtitan's throughput; epoch totals and evaluation set aside.
#include "analysis/ingest/step_log.h"

#include <gtest/gtest.h>

namespace sightline::ingest {
namespace {

TEST(StepLog, NanoGptIterLines) {
  std::string log = "iter 0: loss 4.2416, time 3194.62 ms\n";
  for (int i = 1; i <= 20; ++i)
    log += "iter " + std::to_string(i) + ": loss 4.1, time 17." + std::to_string(i % 10) + "0ms, mfu 12.3%\n";
  log += "step 250: train loss 1.9000, val loss 2.0000\n";  // no time: not a step's line
  auto s = parseStepLog(log);
  EXPECT_EQ(s.kind, StepLogKind::PerStep);
  EXPECT_EQ(s.format, "per-step `time`");
  EXPECT_EQ(s.warmup_lines, 2) << "the compile iteration, and a tenth";
  EXPECT_NEAR(static_cast<double>(s.median_ns), 17.5e6, 0.5e6);
  EXPECT_LT(s.max_ns, 20'000'000);
  EXPECT_EQ(s.steps, s.lines);
}

TEST(StepLog, TheImageNetExampleWithoutItsEvaluation) {
  std::string log;
  for (int i = 0; i < 30; i += 10)
    log += "Epoch: [0][" + std::to_string(i) + "/5005]\tTime  0.2" + std::to_string(i / 10) +
           "0 ( 0.250)\tData  0.001 ( 0.003)\tLoss 6.9 (6.9)\tAcc@1   0.00 (  0.10)\n";
  log += "Test: [ 10/196]\tTime  0.900 ( 0.900)\tLoss 6.9\n";
  auto s = parseStepLog(log);
  EXPECT_EQ(s.kind, StepLogKind::PerStep);
  EXPECT_EQ(s.lines, 2);
  // Bare seconds, the step's own figures (0.210 and 0.220), not the running mean; of two
  // readings, the middle of them, not the smaller (which the headline once took).
  EXPECT_EQ(s.median_ns, 215'000'000);
  EXPECT_EQ(s.set_aside, 1) << "the evaluation's line";
}

TEST(StepLog, MeansOverBatchesAndNeverTheEpochsTotal) {
  // pytorch/examples' word language model: `ms/batch` is the mean of the 200 batches since the
  // last line; the epoch's end line holds the epoch's time, which once read as the step.
  std::string log;
  for (int epoch = 1; epoch <= 2; ++epoch) {
    for (int b = 200; b <= 400; b += 200)
      log += "| epoch   " + std::to_string(epoch) + " |   " + std::to_string(b) +
             "/  453 batches | lr 20.00 | ms/batch  7.3" + std::to_string(b / 200) + " | loss  6.01 | ppl   408.0\n";
    log += "-----------------------------------------------------------------------------------------\n";
    log += "| end of epoch   " + std::to_string(epoch) + " | time:  3.76s | valid loss  5.74 | valid ppl   310.50\n";
  }
  auto s = parseStepLog(log);
  EXPECT_EQ(s.kind, StepLogKind::Averaged);
  EXPECT_EQ(s.format, "`ms/batch` means");
  EXPECT_EQ(s.warmup_lines, 1);
  EXPECT_EQ(s.lines, 3);
  EXPECT_EQ(s.steps, 600) << "each line stands for the 200 batches since the last";
  EXPECT_NEAR(static_cast<double>(s.median_ns), 7.32e6, 0.011e6);
  EXPECT_EQ(s.set_aside, 2) << "the two epoch totals";
}

TEST(StepLog, TqdmBarsOfLightningAndTheTrainer) {
  // Redrawn with carriage returns; the validation bar is not a training step.
  std::string log =
      "Epoch 0:  10%|█         | 100/1000 [00:10<01:30,  9.90it/s, v_num=0, loss=1.23]\r"
      "Epoch 0:  20%|██        | 200/1000 [00:20<01:20, 10.00it/s, v_num=0, loss=1.20]\r"
      "Epoch 0:  30%|███       | 300/1000 [00:30<01:10, 10.00it/s, v_num=0, loss=1.10]\r"
      "Validation DataLoader 0: 100%|██████████| 50/50 [00:01<00:00, 40.00it/s]\n";
  auto s = parseStepLog(log);
  EXPECT_EQ(s.kind, StepLogKind::Averaged);
  EXPECT_EQ(s.format, "tqdm rates");
  EXPECT_EQ(s.median_ns, 100'000'000);
  EXPECT_EQ(s.steps, 200);
  EXPECT_EQ(s.set_aside, 1);
  // Slow steps print seconds per iteration.
  auto slow =
      parseStepLog(" 45%|████▌     | 9/20 [00:30<00:36,  3.20s/it]\n 50%|█████     | 10/20 [00:33<00:33,  3.10s/it]\n");
  EXPECT_EQ(slow.median_ns, 3'100'000'000);
}

TEST(StepLog, TheTrainersWholeRunFigure) {
  std::string log =
      "{'loss': 2.31, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.5}\n"
      "{'train_runtime': 123.4, 'train_samples_per_second': 50.2, 'train_steps_per_second': 6.25, 'train_loss': 2.1, "
      "'epoch': 3.0}\n";
  auto s = parseStepLog(log);
  EXPECT_EQ(s.kind, StepLogKind::WholeRun);
  EXPECT_EQ(s.median_ns, 160'000'000);
  EXPECT_EQ(s.steps, 771);
}

TEST(StepLog, TorchtitanThroughputWithItsBatch) {
  std::string log =
      "[rank0]:2024-05-01 10:00:00,000 - root - INFO - Training starts at step 1, with local batch size 8, global "
      "batch size 64, sequence length 2048, total steps 1000\n";
  for (int i = 1; i <= 5; ++i)
    log += "[rank0]:2024-05-01 10:00:0" + std::to_string(i) + ",000 - root - INFO - step: " + std::to_string(i * 10) +
           "  loss:  7.80  memory: 30.12GiB(31.72%)  tps: 16,384  tflops: 120.5  mfu: 12.19%\n";
  auto s = parseStepLog(log);
  EXPECT_EQ(s.kind, StepLogKind::Throughput);
  EXPECT_EQ(s.median_ns, 1'000'000'000) << "8 × 2048 tokens at 16,384 tokens/s";
  // Without the batch and sequence length, tps alone gives no step.
  EXPECT_EQ(parseStepLog(log.substr(log.find('\n') + 1)).median_ns, 0);
}

TEST(StepLog, PlainStepLinesAndNothingElse) {
  auto s = parseStepLog(
      "step 1 | 130.0 ms/step\nstep 2 | step_time=0.121s\nstep 3 | step_time=0.123s\nstep 4 | step_time=0.122s\n");
  EXPECT_EQ(s.kind, StepLogKind::PerStep);
  EXPECT_EQ(s.lines, 3) << "the first is warm-up";
  EXPECT_EQ(s.median_ns, 122'000'000);
  EXPECT_EQ(parseStepLog("step 10 | 123.4 ms/step\nstep 20 | 123.4 ms/step\n").median_ns, 123'400'000);
  EXPECT_EQ(parseStepLog("loss 4.2\nloss 4.1\nall done in 12.3 s\n").median_ns, 0);
  EXPECT_EQ(parseStepLog("").kind, StepLogKind::None);
}

// Our FSDP script's log (tests/data/multi/fsdp/fsdp_unprofiled.log): a step's time last on its
// line, with its unit and no key. A line that only ends in a time is no step's.
TEST(StepLog, AStepsTimeAtTheEndOfItsLine) {
  auto s = parseStepLog(
      "step 0 loss 9.1629 1801.9 ms\nstep 1 loss 9.1786 83.8 ms\nstep 2 loss 9.1824 72.8 ms\n"
      "step 3 loss 8.8806 72.5 ms\nstep 4 loss 9.2019 0.0727 s\n");
  EXPECT_EQ(s.kind, StepLogKind::PerStep);
  EXPECT_EQ(s.lines, 4) << "the first is warm-up";
  EXPECT_EQ(s.min_ns, 72'500'000);
  EXPECT_EQ(s.max_ns, 83'800'000);
  EXPECT_EQ(parseStepLog("saved checkpoint in 12.3 s\nloaded 3 files 0.5 s\n").kind, StepLogKind::None);
  EXPECT_EQ(parseStepLog("step 3 eval loss 2.1 400 ms\n").median_ns, 0);
}

// Issue 54: counters of 19 digits once added up past int64 ("standing for -7 steps"). A number
// that long counts nothing; a line stands for at most a billion steps.
TEST(StepLog, HugeCountersAreNoCountersAndNoSumOverflows) {
  std::string log = " 10%| | 1/10 [00:01<00:09, 10.00it/s]\n";
  for (const char* counter : {"9223372036854775807", "5", "9223372036854775807", "99999999999999999999"})
    log += " 20%| | " + std::string(counter) + "/10 [00:02<00:08, 10.00it/s]\n";
  auto s = parseStepLog(log);
  EXPECT_EQ(s.kind, StepLogKind::Averaged);
  EXPECT_EQ(s.lines, 1) << "the line of counter 5 after the warm-up line";
  EXPECT_EQ(s.steps, 4);
  // Twelve digits are a counter still, its steps held to a billion a line.
  std::string big = " 10%| | 1/10 [00:01<00:09, 10.00it/s]\n";
  for (const char* counter : {"999999999999", "3", "999999999999"})
    big += " 20%| | " + std::string(counter) + "/10 [00:02<00:08, 10.00it/s]\n";
  auto b = parseStepLog(big);
  EXPECT_EQ(b.lines, 3);
  EXPECT_EQ(b.steps, kMaxStepsPerLine + 3 + kMaxStepsPerLine);
  for (int64_t w : b.weights) EXPECT_GT(w, 0);
  // Hugging Face's whole-run figure of an absurd runtime: a billion steps, not a wrapped count.
  auto h = parseStepLog("{'train_runtime': 1" + std::string(300, '0') + ", 'train_steps_per_second': 6.25}\n");
  EXPECT_EQ(h.steps, kMaxStepsPerLine);
  // Bare times far past any step, in seconds by their median: none is a step.
  auto far = parseStepLog("iter 1 time 9900000000000\niter 2 time 9900000000000\niter 3 time 9900000000000\n");
  EXPECT_EQ(far.median_ns, 0);
  EXPECT_GE(far.steps, 0);
}

std::string utf16(const std::string& ascii, bool little, bool bom) {
  std::string out = bom ? (little ? std::string("\xff\xfe") : std::string("\xfe\xff")) : std::string();
  for (char c : ascii) {
    out += little ? c : '\0';
    out += little ? '\0' : c;
  }
  return out;
}

// Issue 54: what PowerShell's `>` writes (UTF-16LE with a byte-order mark) was "no step times
// found"; now decoded, either order, with or without the mark, and the format says so.
TEST(StepLog, Utf16LogsAreDecodedAndSaySo) {
  std::string log;
  for (int i = 0; i < 12; ++i) log += "iter " + std::to_string(i) + ": loss 4.1, time 17.50ms\r\n";
  auto plain = parseStepLog(log);
  ASSERT_EQ(plain.median_ns, 17'500'000);
  for (bool little : {true, false})
    for (bool bom : {true, false}) {
      auto s = parseStepLog(utf16(log, little, bom));
      std::string name = little ? "UTF-16LE" : "UTF-16BE";
      EXPECT_EQ(s.encoding, name) << bom;
      EXPECT_EQ(s.median_ns, plain.median_ns) << name << " " << bom;
      EXPECT_EQ(s.lines, plain.lines) << name << " " << bom;
      EXPECT_EQ(s.format, plain.format + " (" + name + ")");
      EXPECT_EQ(s.first_line, plain.first_line);
    }
  // Outside the BMP: a surrogate pair decodes to one character; a lone surrogate is U+FFFD.
  std::string pair =
      "\xff\xfe" + utf16("iter 1 ", true, false) + "\x3d\xd8\x80\xde" + utf16(" time 5ms\n", true, false);
  EXPECT_EQ(parseStepLog(pair).first_line, "iter 1 \xf0\x9f\x9a\x80 time 5ms");
  std::string lone = "\xff\xfe" + utf16("iter 1 ", true, false) + "\x3d\xd8" + utf16(" time 5ms\n", true, false);
  EXPECT_EQ(parseStepLog(lone).first_line, "iter 1 \xef\xbf\xbd time 5ms");
}

TEST(StepLog, AUtf8ByteOrderMarkIsSkipped) {
  // The mark once made the first line no `step ` line.
  auto s = parseStepLog("\xef\xbb\xbfstep 1 loss 9.1 80.0 ms\nstep 2 loss 9.0 81.0 ms\nstep 3 loss 8.9 82.0 ms\n");
  EXPECT_EQ(s.first_line, "step 1 loss 9.1 80.0 ms");
  EXPECT_EQ(s.encoding, "UTF-8");
  EXPECT_EQ(s.format, "per-step time at the line's end");
}

// The reader fed in pieces, cut anywhere (inside the first four bytes, a character, a line),
// reads what the whole does.
TEST(StepLog, PiecesReadAsTheWhole) {
  std::string log = "Epoch: [0][ 10/5005]\tTime  0.220 ( 0.250)\n\xef\xbb\xbf";
  for (int i = 0; i < 30; ++i)
    log += "| epoch 1 | " + std::to_string(i * 200) + "/ 9000 batches | ms/batch 7.3" + std::to_string(i % 10) +
           " | loss 6.01 · ok\r";
  log += std::string(5000, 'x') + "\nstep 7 loss 9.1 80.0 ms";
  for (const std::string& text : {log, utf16(log, true, true), utf16(log, false, false)}) {
    auto whole = parseStepLog(text);
    ASSERT_GT(whole.median_ns, 0);
    for (size_t piece : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{4096}}) {
      StepLogReader reader;
      for (size_t at = 0; at < text.size(); at += piece) reader.feed(std::string_view(text).substr(at, piece));
      auto s = reader.finish();
      EXPECT_EQ(s.median_ns, whole.median_ns) << piece;
      EXPECT_EQ(s.steps, whole.steps) << piece;
      EXPECT_EQ(s.lines, whole.lines) << piece;
      EXPECT_EQ(s.set_aside, whole.set_aside) << piece;
      EXPECT_EQ(s.format, whole.format) << piece;
      EXPECT_EQ(s.first_line, whole.first_line) << piece;
    }
  }
}

}  // namespace
}  // namespace sightline::ingest
