#include "config/tree.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include "config/schema.h"
#include "mlusim/sim/config.h"

namespace mlusim::sim::config_internal {
namespace fs = std::filesystem;

namespace {

constexpr const char* kExtendsKey = "extends";
constexpr std::size_t kMaxEntries = 10000;  // map entries in one document (see Reader::flatten)
constexpr std::size_t kMaxDepth = 32;       // maps nested in one document (the schema needs 3)

std::string node_kind(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Undefined: break;
  }
  return "an undefined node";
}

int line_of(const YAML::Node& node) { return node.Mark().is_null() ? 0 : node.Mark().line + 1; }

// Follows `extends:` chains. One reader loads one top-level document; `chain_` holds the files
// being read, outermost first, so a file that (indirectly) extends itself is caught.
class Reader {
 public:
  Tree read_file(const fs::path& path) {
    const std::string shown = path.string();
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError(shown, "", "cannot open file");
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw ConfigError(shown, "", "cannot read file");
    chain_.push_back({canonical_key(path), shown});
    Tree tree = read_text(text.str(), shown, path.parent_path());
    chain_.pop_back();
    return tree;
  }

  Tree read_text(const std::string& text, const std::string& file, const fs::path& base_dir) {
    if (chain_.empty()) chain_.push_back({file, file});  // text given directly (parse_config)
    const YAML::Node root = parse(text, file);
    Tree tree;
    if (const YAML::Node extends = root[kExtendsKey]) tree = read_base(extends, file, base_dir);
    Tree own;
    std::set<std::string> seen;
    std::size_t entries = 0;
    std::vector<YAML::Node> ancestors{root};
    flatten(root, "", file, own, seen, entries, ancestors);
    ++documents_read_;
    for (auto& [key, leaf] : own) {  // the including file wins
      leaf.order = documents_read_;
      tree[key] = std::move(leaf);
    }
    return tree;
  }

 private:
  struct Link {
    std::string key;    // canonical path, for comparison
    std::string shown;  // as written in messages
  };

  static std::string canonical_key(const fs::path& path) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(path, ec);
    return ec ? path.lexically_normal().string() : canonical.string();
  }

  // Records where each document starts; the events themselves are not needed.
  struct DocumentStarts : YAML::EventHandler {
    std::vector<YAML::Mark> marks;
    void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
    void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
    void OnMapEnd() override {}
  };

  [[noreturn]] static void syntax_error(const std::string& file, const YAML::Mark& mark, const std::string& what) {
    std::string where;
    if (!mark.is_null())
      where = " at line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
    throw ConfigError(file, "", "YAML syntax error" + where + ": " + what);
  }

  // The document's root map. Documents are counted with yaml-cpp's parser, not YAML::LoadAll:
  // LoadAll never returns for text with a flow indicator the parser cannot consume at document
  // level (yaml-cpp 0.7: ",", "[a]," or "- x\n,": the parser reports empty documents at that same
  // position forever). Two documents starting at one position are that case: a syntax error.
  static YAML::Node parse(const std::string& text, const std::string& file) {
    DocumentStarts starts;
    YAML::Node root;
    try {
      std::istringstream in(text);
      YAML::Parser parser(in);
      // Three documents at most: enough to tell one from more, and a stuck parser from a next document.
      while (starts.marks.size() < 3 && parser.HandleNextDocument(starts)) {
        const std::vector<YAML::Mark>& m = starts.marks;
        if (m.size() >= 2 && m[m.size() - 1].pos == m[m.size() - 2].pos) {
          const auto at = static_cast<std::size_t>(m.back().pos);
          const bool shown = at < text.size() && text[at] > ' ' && text[at] < 0x7f;
          syntax_error(file, m.back(), shown ? "unexpected '" + text.substr(at, 1) + "'" : "unexpected text");
        }
      }
      root = YAML::Load(text);  // the first document (parsed again, as nodes)
    } catch (const YAML::Exception& e) {
      syntax_error(file, e.mark, e.msg);
    }
    if (starts.marks.empty() || root.IsNull())
      throw ConfigError(file, "", "empty document: expected a map of configuration keys");
    if (starts.marks.size() > 1)
      throw ConfigError(file, "", at_line("holds more than one YAML document", starts.marks[1].line + 1));
    if (!root.IsMap())
      throw ConfigError(file, "", at_line("top level must be a map of configuration keys, got " + node_kind(root),
                                          line_of(root)));
    return root;
  }

  Tree read_base(const YAML::Node& extends, const std::string& file, const fs::path& base_dir) {
    if (!extends.IsScalar() || extends.Scalar().empty())
      throw ConfigError(file, kExtendsKey,
                        at_line("expected a preset name or a path to a YAML file, got " + node_kind(extends),
                                line_of(extends)));
    const std::string& target = extends.Scalar();
    fs::path path;
    // The error_code forms: a name the file system refuses (longer than NAME_MAX, say) is a file
    // that is not there, not a std::filesystem_error escaping the loader.
    std::error_code ec;
    if (looks_like_path(target)) {
      path = fs::path(target).is_absolute() ? fs::path(target) : (base_dir / target).lexically_normal();
      if (!fs::is_regular_file(path, ec))
        throw ConfigError(file, kExtendsKey, at_line("no such file: " + path.string(), line_of(extends)));
    } else {
      path = config_dir() / (target + ".yaml");
      if (!fs::is_regular_file(path, ec))
        throw ConfigError(file, kExtendsKey,
                          at_line("unknown preset \"" + target + "\" (available in " + config_dir().string() +
                                      ": " + preset_list() + ")",
                                  line_of(extends)));
    }
    const std::string key = canonical_key(path);
    const auto repeat = std::find_if(chain_.begin(), chain_.end(), [&](const Link& l) { return l.key == key; });
    if (repeat != chain_.end()) {
      std::string cycle;
      for (auto it = repeat; it != chain_.end(); ++it) cycle += it->shown + " -> ";
      throw ConfigError(file, kExtendsKey, at_line("extends cycle: " + cycle + path.string(), line_of(extends)));
    }
    return read_file(path);
  }

  // Adds every leaf of `node` under `prefix` to `out`. Maps are descended into unless their path
  // is itself a key, so a map given where a number belongs is kept and reported as a wrong type.
  // `entries` counts the map entries visited in this document: YAML aliases share one map among
  // many places, so a few hundred bytes of maps that alias one another expand into billions of
  // entries (a "billion laughs" document). No config comes near kMaxEntries. `ancestors` are the maps
  // being flattened, outermost first: an alias can make a map contain itself, which would recurse
  // until the stack overflows; so can nesting deeper than kMaxDepth, which no config needs.
  static void flatten(const YAML::Node& node, const std::string& prefix, const std::string& file, Tree& out,
                      std::set<std::string>& seen, std::size_t& entries, std::vector<YAML::Node>& ancestors) {
    for (const auto& entry : node) {
      const YAML::Node& key_node = entry.first;
      const YAML::Node& value = entry.second;
      if (++entries > kMaxEntries)
        throw ConfigError(file, "", "more than " + std::to_string(kMaxEntries) +
                                        " keys and sections (YAML aliases that repeat maps inside one another?)");
      if (!key_node.IsScalar())
        throw ConfigError(file, prefix, at_line("map key is " + node_kind(key_node) + ", expected a name",
                                                line_of(key_node)));
      const std::string& name = key_node.Scalar();
      const std::string path = prefix.empty() ? name : prefix + "." + name;
      const int line = line_of(key_node);
      if (prefix.empty() && name == kExtendsKey) continue;  // handled by read_base
      if (name.empty() || name.find('.') != std::string::npos)
        throw ConfigError(file, path, at_line("write nested maps, not dotted or empty key names", line));
      if (!seen.insert(path).second) throw ConfigError(file, path, at_line("duplicate key", line));
      if (value.IsMap() && find_field(path) == nullptr && (value.size() > 0 || is_section(path))) {
        for (const YAML::Node& outer : ancestors)
          if (outer.is(value))
            throw ConfigError(file, path, at_line("the map contains itself (through a YAML alias)", line));
        if (ancestors.size() > kMaxDepth)
          throw ConfigError(file, path, at_line("maps nested more than " + std::to_string(kMaxDepth) + " deep", line));
        ancestors.push_back(value);
        flatten(value, path, file, out, seen, entries, ancestors);
        ancestors.pop_back();
      } else {
        out[path] = Leaf{value, file, line};
      }
    }
  }

  std::vector<Link> chain_;
  int documents_read_ = 0;  // bases finish first, so each document's leaves outrank its bases'
};

}  // namespace

bool looks_like_path(const std::string& name_or_path) {
  constexpr std::string_view kSuffix = ".yaml";
  return name_or_path.find('/') != std::string::npos ||
         (name_or_path.size() >= kSuffix.size() &&
          name_or_path.compare(name_or_path.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0);
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(config_dir(), ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".yaml") names.push_back(it->path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string preset_list() {
  const std::vector<std::string> names = preset_names();
  if (names.empty()) return "none found";
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  return list;
}

std::string at_line(const std::string& reason, int line) {
  return line > 0 ? reason + " (line " + std::to_string(line) + ")" : reason;
}

Tree read_config_file(const fs::path& path) { return Reader().read_file(path); }

Tree read_config_text(const std::string& text, const std::string& origin, const fs::path& base_dir) {
  return Reader().read_text(text, origin, base_dir);
}

}  // namespace mlusim::sim::config_internal
