// Library paths and the user's files.
#include "analysis/attribution/user_files.h"

#include <algorithm>
#include <cctype>

#include <set>

namespace sightline::attribution {

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

bool isTrimmedLibraryPath(std::string_view path) {
  static const std::set<std::string_view> kLibraries = {"torch",
                                                        "torchvision",
                                                        "torchaudio",
                                                        "torchtext",
                                                        "numpy",
                                                        "transformers",
                                                        "accelerate",
                                                        "apex",
                                                        "triton",
                                                        "lightning",
                                                        "pytorch_lightning",
                                                        "tqdm",
                                                        "sympy",
                                                        "importlib",
                                                        "collections",
                                                        "concurrent",
                                                        "multiprocessing",
                                                        "json",
                                                        "logging",
                                                        "asyncio",
                                                        "unittest",
                                                        "email",
                                                        "http",
                                                        "encodings",
                                                        "ctypes",
                                                        "functorch",
                                                        "timm",
                                                        "datasets",
                                                        "huggingface_hub",
                                                        "safetensors",
                                                        "jinja2",
                                                        "typing.py",
                                                        "threading.py",
                                                        "contextlib.py",
                                                        "functools.py",
                                                        "abc.py",
                                                        "enum.py",
                                                        "os.py",
                                                        "posixpath.py",
                                                        "weakref.py",
                                                        "warnings.py",
                                                        "random.py",
                                                        "queue.py",
                                                        "copy.py",
                                                        "inspect.py",
                                                        "dataclasses.py",
                                                        "selectors.py",
                                                        "socket.py",
                                                        "tempfile.py",
                                                        "shutil.py",
                                                        "pickle.py",
                                                        "copyreg.py",
                                                        "re.py",
                                                        "types.py",
                                                        "traceback.py",
                                                        "linecache.py",
                                                        "tokenize.py",
                                                        "codecs.py",
                                                        "genericpath.py",
                                                        "operator.py",
                                                        "signal.py",
                                                        "subprocess.py",
                                                        "argparse.py",
                                                        "gettext.py",
                                                        "locale.py",
                                                        "pathlib.py",
                                                        "string.py",
                                                        "textwrap.py",
                                                        "numbers.py",
                                                        "bisect.py",
                                                        "heapq.py",
                                                        "itertools.py",
                                                        "math.py",
                                                        "time.py",
                                                        "datetime.py",
                                                        "uuid.py",
                                                        "hashlib.py",
                                                        "base64.py",
                                                        "struct.py",
                                                        "io.py",
                                                        "site.py",
                                                        "runpy.py",
                                                        "_weakrefset.py",
                                                        "_collections_abc.py",
                                                        "sre_compile.py",
                                                        "sre_parse.py",
                                                        "zipfile.py",
                                                        "tarfile.py",
                                                        "gzip.py",
                                                        "platform.py",
                                                        "sysconfig.py",
                                                        "statistics.py"};
  if (path.empty() || path[0] == '/') return false;
  return kLibraries.count(path.substr(0, path.find('/'))) > 0;
}

bool UserFiles::isUser(model::StringId file) {
  if (file >= known_.size()) known_.resize(profile_.strings.size(), -1);
  int8_t& known = known_[file];
  if (known < 0) {
    const std::string& path = profile_.strings[file];
    if (isGeneratedCode(path) || isCaptureHookFile(path))
      known = 0;
    else if (options_.is_user_file)
      known = options_.is_user_file(path) ? 1 : 0;
    else if (options_.call_sites)
      known = options_.call_sites(path) ? 1 : 0;
    else
      known = isDefaultUserFile(path) && !isTrimmedLibraryPath(path) ? 1 : 0;
  }
  return known == 1;
}

// Code that torch.compile generates: Inductor's output modules (`<cache>/xx/c<hash>.py`, under
// /tmp/torchinductor_<user> by default or TORCHINDUCTOR_CACHE_DIR) are not the user's lines;
// the user's call into the compiled model is.
bool makesBatches(std::string_view function) {
  while (function.starts_with('_')) function.remove_prefix(1);
  if (!contains(function, "batch")) return false;
  for (std::string_view verb : {"get", "load", "next", "fetch", "sample", "make", "prepare", "read", "gen", "build",
                                "create", "random", "iter", "batch"})
    if (function.starts_with(verb)) return true;
  return false;
}

bool isGeneratedCode(std::string_view path) {
  if (contains(path, "torchinductor")) return true;
  auto slash = path.rfind('/');
  if (slash == std::string_view::npos || slash < 3 || path[slash - 3] != '/') return false;
  std::string_view name = path.substr(slash + 1);
  if (name.size() != 55 || name[0] != 'c' || !name.ends_with(".py")) return false;
  return std::all_of(name.begin() + 1, name.end() - 3,
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
}

bool isCaptureHookFile(std::string_view path) {
  // The folder sightline capture makes with mkdtemp, `$TMPDIR/sightline-capture-XXXXXX/`: the
  // name and its six random letters or digits exactly, so that a user's folder named
  // `sightline-capture-tests/` stays the user's.
  constexpr std::string_view kPrefix = "sightline-capture-";
  for (size_t at = path.find(kPrefix); at != std::string_view::npos; at = path.find(kPrefix, at + 1)) {
    size_t random = at + kPrefix.size(), slash = random + 6;
    if ((at > 0 && path[at - 1] != '/') || slash >= path.size() || path[slash] != '/') continue;
    if (std::all_of(path.begin() + static_cast<std::ptrdiff_t>(random),
                    path.begin() + static_cast<std::ptrdiff_t>(slash),
                    [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }))
      return true;
  }
  return false;
}

bool isDefaultUserFile(std::string_view path) {
  if (path.empty() || path[0] == '<') return false;
  if (isGeneratedCode(path) || isCaptureHookFile(path)) return false;
  if (contains(path, "site-packages") || contains(path, "dist-packages") || contains(path, "<frozen")) return false;
  // The standard library: .../lib/python3.X/<module>.py (site-packages excluded above).
  auto lib = path.find("/lib/python");
  if (lib != std::string_view::npos) return false;
  return true;
}

bool isNativeFrameFile(std::string_view path) {
  if (path == "??" || contains(path, "/include/c++/") || path.starts_with("/usr/include/")) return true;
  for (std::string_view ext : {".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".cu", ".cuh", ".inl", ".S"})
    if (path.ends_with(ext)) return true;
  return false;
}

}  // namespace sightline::attribution
