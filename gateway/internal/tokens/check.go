package tokens

import (
	"strings"
	"unicode"
)

// Problems [CheckDescription] reports.
const (
	// ProblemEmpty: the description is empty or blank.
	ProblemEmpty = "empty"
	// ProblemOnlyName: the description only restates the tool's name or
	// title ("Coin flip get problem" for coin-flip__get-problem).
	ProblemOnlyName = "only restates the tool's name"
	// ProblemNoVerb: the description has no verb, so it names a thing
	// without saying what the tool does with it.
	ProblemNoVerb = "no verb: does not say what the tool does"
)

// CheckDescription reports why description fails to say what the tool
// called name does: nil when it passes.
//
// The check is a heuristic meant to catch the failures of a short
// description derived mechanically, and it lists the tools it flags for a
// person to read:
//
//  1. the description is not empty;
//  2. it is not the tool's name again: compared with letters and digits
//     only, case folded, against the whole name and the part after a
//     "server__" prefix ("Get earning dates." for get_earning_dates
//     fails). A description equal to the tool's title passes: titles are
//     often a sentence saying what the tool does;
//  3. it contains a verb: a word whose base form (after stripping -s, -es,
//     -ies, -ed, -ing) is one of about 400 English verbs common in tool
//     descriptions (get, list, create, search, return, ...), or, for text
//     in Chinese, Japanese or Korean, one of their common action words
//     (获取, 查询, 조회, ...).
func CheckDescription(name, description string) []string {
	d := strings.TrimSpace(description)
	if d == "" {
		return []string{ProblemEmpty}
	}
	var problems []string
	key := fold(d)
	for _, n := range nameForms(name) {
		if n != "" && key == n {
			problems = append(problems, ProblemOnlyName)
			break
		}
	}
	if !hasVerb(d) {
		problems = append(problems, ProblemNoVerb)
	}
	return problems
}

// fold keeps the letters and digits of s, lower-cased.
func fold(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// nameForms are the folded spellings a description must not merely
// repeat.
func nameForms(name string) []string {
	forms := []string{fold(name)}
	if _, tool, ok := strings.Cut(name, "__"); ok {
		forms = append(forms, fold(tool))
	}
	return forms
}

// hasVerb reports whether s contains a verb of the lexicon.
func hasVerb(s string) bool {
	for _, w := range cjkVerbs {
		if strings.Contains(s, w) {
			return true
		}
	}
	words := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z')
	})
	for _, w := range words {
		for _, base := range bases(w) {
			if englishVerbs[base] {
				return true
			}
		}
	}
	return false
}

// bases returns w and the base forms it may be an inflection of.
func bases(w string) []string {
	out := []string{w}
	add := func(suffix, repl string) {
		if strings.HasSuffix(w, suffix) && len(w) > len(suffix)+1 {
			stem := strings.TrimSuffix(w, suffix) + repl
			out = append(out, stem)
			// A doubled final consonant: "stopped", "running".
			if n := len(stem); repl == "" && n >= 3 && stem[n-1] == stem[n-2] {
				out = append(out, stem[:n-1])
			}
		}
	}
	add("s", "")
	add("es", "")
	add("ies", "y")
	add("ed", "")
	add("ed", "e")
	add("ied", "y")
	add("ing", "")
	add("ing", "e")
	return out
}

// englishVerbs are base forms of verbs that say what a tool does.
var englishVerbs = setOf(`
accept access acknowledge activate add adjust aggregate allow analyse analyze annotate answer append apply approve archive arrange
ask assign attach audit authenticate authorize autocomplete back backup ban batch begin block book bookmark browse build bulk
calculate call cancel capture categorize change chat check checkout choose clean clear click clone close collect combine comment
commit compare compile complete compose compress compute configure confirm connect consolidate construct contain convert copy
count crawl create crop customize cut debug decode decrypt deduplicate define delete deploy describe design detect determine
diff disable disconnect discover dismiss display do download draft drag draw drop duplicate echo edit embed enable encode encrypt
end enqueue enrich ensure enter erase estimate evaluate execute expand explain explore export extract fetch fill filter find
finish fix flag flip focus follow force fork format forward gather generate get give go grant group guess handle help hide
highlight hover identify import indicate index initialize input insert inspect install invite invoke join jump keep kill label launch
learn let link list load locate lock log login logout look lookup make manage map mark match measure merge migrate mock modify
monitor move mute navigate normalize notify obtain offer open optimize order organize outline output overwrite paginate parse
paste patch pause perform pick pin ping place plan play plot poll populate post predict prepare press preview print process
produce profile promote prompt provide publish pull purge push put query queue quote rank rate react read rebase receive
recommend record redact redirect reduce refresh register reject release reload remember remind remove rename render renew reopen
reorder repeat replace reply report request require rerun reset resize research resolve respond restart restore resume retrieve
return reverse review revoke rewrite roll rotate route run sample save scan schedule scrape screenshot scroll search select
send serve set setup share show shorten sign simulate skip sleep snapshot solve sort speak specify split stage star start stop
store stream submit subscribe suggest summarize summarise supply support suspend switch sync synchronize tag take talk test
think toggle trace track transcribe transfer transform translate trigger truncate tweet type unarchive unassign unblock undo
unfollow uninstall unlock unmute unpin unstage unstar unsubscribe update upgrade upload upsert use validate verify view visit
vote wait watch write zip
lookup looksup
`)

// cjkVerbs are common action words of tool descriptions in Chinese,
// Japanese and Korean, matched as substrings.
var cjkVerbs = []string{
	// Chinese
	"获取", "获得", "查询", "查找", "查看", "检索", "搜索", "列出", "返回", "创建", "新建", "删除", "更新", "修改",
	"编辑", "生成", "发送", "读取", "写入", "执行", "运行", "计算", "转换", "检查", "分析", "下载", "上传", "添加",
	"设置", "打开", "关闭", "提供", "调用", "显示", "翻译", "识别", "管理", "启动", "停止", "保存", "导出", "导入",
	"解析", "比较", "推荐", "预测", "统计", "订阅", "规划", "预订", "搜集", "收集", "抓取", "爬取", "截图", "浏览",
	"播放", "绘制", "插入", "合并", "拆分", "验证", "校验", "压缩", "解压", "移动", "复制", "替换", "提取", "总结", "通知",
	"监控", "测试", "部署", "安装", "登录", "注册", "评估", "用于", "取得",
	// Japanese
	"検索", "作成", "削除", "更新", "表示", "生成", "変換", "実行", "送信", "します", "する",
	// Korean
	"조회", "검색", "생성", "삭제", "수정", "가져", "반환", "실행", "변환", "합니다", "하는", "한다",
}

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}
