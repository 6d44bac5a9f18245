"""The framework's own output around MIOpen's lines: banners, progress bars, losses."""

from __future__ import annotations

import random

from miotui.samplegen.spec import SampleSpec

# --------------------------------------------------------------------------------------
# Framework noise
# --------------------------------------------------------------------------------------

class Noise:
    """Lines the framework prints around MIOpen's: banners, progress bars, losses."""

    def __init__(self, spec: SampleSpec, steps: int) -> None:
        self.spec = spec
        self.fmt = spec.format
        self.steps = steps
        self.rng = random.Random(f"{spec.seed}:noise")
        self.loss = 6.95 + self.rng.uniform(-0.05, 0.05)
        self.clock = 0.0
        self.epochs = 1 if spec.size is None else 90

    def _tf_time(self) -> str:
        self.clock += self.rng.uniform(0.01, 2.0)
        t = int(self.clock)
        year = "2019-03-11 09" if self.fmt == "trace2018" else "2021-03-04 10"
        return f"{year}:{(12 + t // 60) % 60:02d}:{t % 60:02d}.{self.rng.randrange(10 ** 6):06d}"

    def preamble(self) -> list[str]:
        if self.fmt == "trace2018":
            return [
                "Using TensorFlow backend.",
                f"{self._tf_time()}: I tensorflow/core/platform/cpu_feature_guard.cc:141] Your CPU supports "
                "instructions that this TensorFlow binary was not compiled to use: SSE4.1 SSE4.2 AVX AVX2 FMA",
                f"{self._tf_time()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1531] Found device 0 with "
                "properties: ",
                "name: Vega 10 XT [Radeon RX Vega 64]",
                "AMDGPU ISA: gfx900",
                "memoryClockRate (GHz) 1.63",
                "pciBusID 0000:03:00.0",
                "Total memory: 7.98GiB",
                "Free memory: 7.73GiB",
                f"{self._tf_time()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1642] Adding visible gpu "
                "devices: 0",
                f"{self._tf_time()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1053] Created TensorFlow "
                "device (/job:localhost/replica:0/task:0/device:GPU:0 with 7513 MB memory) -> physical GPU "
                "(device: 0, name: Vega 10 XT [Radeon RX Vega 64], pci bus id: 0000:03:00.0)",
                "",
                f"Epoch 1/{self.epochs}",
            ]
        if self.fmt == "trace2x":
            return [
                f"{self._tf_time()}: I tensorflow/stream_executor/platform/default/dso_loader.cc:53] Successfully "
                "opened dynamic library libhip_hcc.so",
                f"{self._tf_time()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1734] Found device 0 with "
                "properties: ",
                "pciBusID: 0000:43:00.0 name: Vega 20     ROCm AMDGPU Arch: gfx906",
                "coreClock: 1.725GHz coreCount: 60 deviceMemorySize: 31.98GiB deviceMemoryBandwidth: -1B/s",
                f"{self._tf_time()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1862] Adding visible gpu "
                "devices: 0",
                f"{self._tf_time()}: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1406] Created TensorFlow "
                "device (/job:localhost/replica:0/task:0/device:GPU:0 with 30196 MB memory) -> physical GPU "
                "(device: 0, name: Vega 20, pci bus id: 0000:43:00.0)",
                f"Epoch 1/{self.epochs}",
            ]
        return ["=> creating model 'resnet50'",
                "=> using ROCm device 0: AMD Instinct MI250X/MI250 (gfx90a:sramecc+:xnack-)"]

    def _keras_bar(self, step: int, done: bool) -> str:
        width = 30
        filled = width * step // self.steps
        if done:
            bar = "=" * width
            return (f"{step}/{self.steps} [{bar}] - {self.rng.randrange(8, 40)}s "
                    f"{self.rng.randrange(200, 900)}ms/step - loss: {self.loss:.4f} - accuracy: 0.0010")
        bar = "=" * max(filled - 1, 0) + ">" + "." * (width - max(filled, 1))
        eta = max(1, (self.steps - step) * self.rng.randrange(1, 3))
        return (f"{step:>{len(str(self.steps))}}/{self.steps} [{bar}] - ETA: {eta}s - loss: {self.loss:.4f} "
                f"- accuracy: {0.0:.4e}")

    def _tqdm(self, epoch: int, step: int) -> str:
        pct = 100 * step // self.steps
        filled = 10 * step // self.steps
        bar = "\u2588" * filled + " " * (10 - filled)
        rate = self.rng.uniform(2.5, 3.4)
        elapsed = int(step / rate)
        remain = int((self.steps - step) / rate)
        return (f"Epoch {epoch}: {pct:3d}%|{bar}| {step}/{self.steps} [{elapsed // 60:02d}:{elapsed % 60:02d}<"
                f"{remain // 60:02d}:{remain % 60:02d}, {rate:.2f}it/s, loss={self.loss:.3f}]")

    def after_iteration(self, global_step: int) -> list[str]:
        """Output after training step ``global_step`` (1-based): progress, sometimes a loss.

        Progress bars are redrawn with ``\\r`` (Keras, tqdm); a physical line only ends when
        the framework prints a newline, so one line holds several bar states.
        """
        self.loss = max(0.5, self.loss - self.rng.uniform(0.0, 0.004) + self.rng.uniform(-0.01, 0.01))
        epoch, step = divmod(global_step - 1, self.steps)
        step += 1
        done = step == self.steps
        if self.fmt in ("trace2018", "trace2x"):
            if not done:
                return ["\r" + self._keras_bar(step, False)]
            lines = ["\r" + self._keras_bar(max(step - 1, 1), False) + "\r" + self._keras_bar(step, True)]
            if self.epochs > epoch + 1 and self.spec.size is not None:
                lines.append(f"Epoch {epoch + 2}/{self.epochs}")
            return lines
        lines = ["\r" + self._tqdm(epoch, step - 1) + "\r" + self._tqdm(epoch, step)]
        if step == 1 or step % 10 == 0 or done:
            lines.append(f"Epoch: [{epoch}][{step:>{len(str(self.steps))}}/{self.steps}]\tTime "
                         f"{self.rng.uniform(0.28, 0.4):6.3f} ({self.rng.uniform(0.3, 0.5):6.3f})\tData "
                         f"{self.rng.uniform(0.001, 0.02):6.3f} ({self.rng.uniform(0.01, 0.2):6.3f})\tLoss "
                         f"{self.loss:.4e} ({self.loss + 0.01:.4e})\tAcc@1   0.00 (  0.10)\tAcc@5   0.00 (  0.49)")
        return lines

    def before_inference(self) -> list[str]:
        if self.fmt in ("trace2018", "trace2x"):
            return ["", "Evaluating on 1 validation batch..."]
        return ["", "Test: [0/1]\tTime  1.234 ( 1.234)\tLoss 6.8713e+00 (6.8713e+00)"]

    def epilogue(self) -> list[str]:
        if self.fmt in ("trace2018", "trace2x"):
            return [f"1/1 [==============================] - 1s 512ms/step - loss: {self.loss + 0.05:.4f} "
                    "- accuracy: 0.0000e+00", f"val_loss: {self.loss + 0.05:.4f}"]
        return [" * Acc@1 0.000 Acc@5 0.000", "Saving checkpoint to checkpoint.pth.tar"]
