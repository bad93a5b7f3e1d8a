# The Godot side of godot-rl's wire protocol, written for rlcrate.
#
# The Python side listens on 127.0.0.1:<port>; this game connects as a TCP client. Messages both
# ways are a 4-byte little-endian length followed by UTF-8 JSON:
#   handshake {major_version, minor_version}         no reply
#   env_info                                          -> {type: env_info, observation_space,
#                                                        action_space, n_agents, agent_policy_names}
#   reset                                             -> {type: reset, obs: [{obs: [...]}, ...]}
#   action {action: [{move: a}, ...]}                 -> {type: step, obs, reward, done[, final_obs]}
# final_obs is this game's extension (godot-rl ignores it): {"<agent index>": {obs, truncated}}
# for agents whose episode ended this step; they restart at once and `obs` is the new episode's.
# tick_us and codec_us are extensions too: the microseconds this agent step spent in the
# simulation ticks of all instances, and in decoding the action and encoding this message, as
# measured by the engine's clock (the rollout profile splits the trainer's socket wait with them).
#   call {method}                                     -> {type: call, returns: [...]}
#   frame                                             -> {type: frame, width, height, rgb}
# frame is rlcrate's extension for eval.video: the first instance's arena drawn now, as base64
# RGB bytes, row by row from the top; only the full engine (godot3, with a display such as
# Xvfb) draws: the server build answers {type: frame, error}.
#   close                                             the game quits
# The physics loop blocks on the socket while it waits for an action, so one agent step is
# exactly `action_repeat` physics ticks of every instance. When the connection drops (the
# trainer died), the game quits by itself.
#
# Launch arguments: --port=N --env_seed=N --instances=N --speedup=X --action_repeat=N
#   --action_space=discrete|continuous --episode_steps=N --connect_timeout=SECONDS
#   --fault=crash:STEP|hang:STEP|noconnect (fault injection for the supervisor's tests).
# With the engine's --fixed-fps 60 and speedup 1 the game runs unpaced (one physics tick per
# frame, as fast as the CPU allows); without it game time runs at `speedup` x real time.
extends Node

const MAJOR_VERSION := "0"
const ArenaScene := preload("res://arena.tscn")
const Arena := preload("res://arena.gd")

var stream := StreamPeerTCP.new()
var arenas := []
var action_repeat := 1
var repeat_left := 0
var continuous := false
var agent_steps := 0
var fault_kind := ""
var fault_step := -1
var closing := false
var tick_usec := 0
var codec_usec := 0


func _ready() -> void:
	var args := _parse_args()
	var speedup := float(args.get("speedup", "1"))
	Engine.iterations_per_second = int(max(1, round(60.0 * speedup)))
	Engine.time_scale = speedup
	action_repeat = int(max(1, int(args.get("action_repeat", "1"))))
	continuous = args.get("action_space", "discrete") == "continuous"
	_parse_fault(args.get("fault", ""))
	_make_arenas(args)
	if fault_kind == "noconnect":
		OS.delay_msec(3600 * 1000)
	var port := int(args.get("port", "11008"))
	if not _connect(port, float(args.get("connect_timeout", "60"))):
		printerr("ballchase: could not connect to 127.0.0.1:%d; quitting" % port)
		_quit(3)


func _parse_args() -> Dictionary:
	var out := {}
	for arg in OS.get_cmdline_args():
		if arg.begins_with("--"):
			var kv: PoolStringArray = arg.substr(2, arg.length() - 2).split("=", true, 1)
			out[kv[0]] = kv[1] if kv.size() > 1 else "true"
	return out


func _parse_fault(spec: String) -> void:
	var parts := spec.split(":")
	fault_kind = parts[0]
	if parts.size() > 1:
		fault_step = int(parts[1])


func _make_arenas(args: Dictionary) -> void:
	var n := int(max(1, int(args.get("instances", "1"))))
	var seed_value := int(args.get("env_seed", "0"))
	var episode_steps := int(max(1, int(args.get("episode_steps", "500"))))
	var render := OS.get_name() != "Server"
	var cols := int(ceil(sqrt(n)))
	for i in range(n):
		var arena = ArenaScene.instance()
		# Laid out on a grid with gaps, so instances are visibly apart; they share nothing.
		arena.position = Vector2((i % cols) * 440.0, (i / cols) * 440.0)
		add_child(arena)
		arena.setup(hash([seed_value, i]), continuous, episode_steps, render)
		arenas.append(arena)


func _connect(port: int, timeout_s: float) -> bool:
	if stream.connect_to_host("127.0.0.1", port) != OK:
		return false
	var deadline := OS.get_ticks_msec() + int(timeout_s * 1000.0)
	while OS.get_ticks_msec() < deadline:
		var status := stream.get_status()
		if status == StreamPeerTCP.STATUS_CONNECTED:
			stream.set_no_delay(true)
			return true
		if status == StreamPeerTCP.STATUS_ERROR:
			return false
		OS.delay_msec(5)
	return false


func _physics_process(_delta: float) -> void:
	if closing:
		return
	if repeat_left == 0 and not _serve_until_action():
		return
	var t0 := OS.get_ticks_usec()
	for arena in arenas:
		arena.tick()
	tick_usec += OS.get_ticks_usec() - t0
	repeat_left -= 1
	if repeat_left == 0:
		_send_step()


# Answers messages until an action arrives (true) or the game must stop (false).
func _serve_until_action() -> bool:
	while true:
		var text := stream.get_utf8_string()
		if stream.get_status() != StreamPeerTCP.STATUS_CONNECTED:
			printerr("ballchase: connection closed by the trainer; quitting")
			_quit(0)
			return false
		var t0 := OS.get_ticks_usec()
		var parsed := JSON.parse(text)
		if parsed.error != OK or typeof(parsed.result) != TYPE_DICTIONARY:
			printerr("ballchase: bad message: %s" % text.substr(0, 200))
			continue
		var msg: Dictionary = parsed.result
		match msg.get("type", ""):
			"handshake":
				if str(msg.get("major_version", "")) != MAJOR_VERSION:
					printerr("ballchase: protocol major version %s, expected %s" % [msg.get("major_version"), MAJOR_VERSION])
			"env_info":
				_send(_env_info())
			"reset":
				repeat_left = 0
				var obs := []
				for arena in arenas:
					arena.reset_episode()
					obs.append({"obs": arena.observe()})
				_send({"type": "reset", "obs": obs})
			"frame":
				_send(_frame())
			"call":
				var returns := []
				var method := str(msg.get("method", ""))
				for arena in arenas:
					returns.append(arena.call(method) if arena.has_method(method) else null)
				_send({"type": "call", "returns": returns})
			"action":
				var actions: Array = msg.get("action", [])
				for i in range(min(actions.size(), arenas.size())):
					arenas[i].set_action(actions[i].get("move", 0))
				repeat_left = action_repeat
				tick_usec = 0
				codec_usec = OS.get_ticks_usec() - t0
				return true
			"close":
				_quit(0)
				return false
			var other:
				printerr("ballchase: unknown message type %s" % str(other))
	return false


func _frame() -> Dictionary:
	if OS.get_name() == "Server":
		return {"type": "frame", "error": "the server build of Godot draws no frames"}
	var arena = arenas[0]
	arena.show_state()
	VisualServer.force_draw(false)
	var image := get_viewport().get_texture().get_data()
	image.flip_y()
	var margin := 4
	var rect := Rect2(arena.position - Vector2(margin, margin), Vector2(Arena.W, Arena.H) + Vector2(2 * margin, 2 * margin))
	image = image.get_rect(rect.clip(Rect2(Vector2(), image.get_size())))
	image.convert(Image.FORMAT_RGB8)
	return {
		"type": "frame", "width": image.get_width(), "height": image.get_height(),
		"rgb": Marshalls.raw_to_base64(image.get_data()),
	}


func _env_info() -> Dictionary:
	var obs_space := {"obs": {"size": [Arena.OBS_SIZE], "space": "box"}}
	var act_space := {"move": {"size": Arena.N_ACTIONS, "action_type": "discrete"}}
	if continuous:
		act_space = {"move": {"size": 2, "action_type": "continuous"}}
	var obs_spaces := []
	var act_spaces := []
	var names := []
	for _arena in arenas:
		obs_spaces.append(obs_space)
		act_spaces.append(act_space)
		names.append("shared_policy")
	return {
		"type": "env_info", "observation_space": obs_spaces, "action_space": act_spaces,
		"n_agents": arenas.size(), "agent_policy_names": names,
	}


func _send_step() -> void:
	agent_steps += 1
	if agent_steps == fault_step:
		_inject_fault()
	var t0 := OS.get_ticks_usec()
	# Numbers go out as fixed-point JSON (123456e-6 == 0.123456): Godot 3's float-to-text is
	# the costliest part of a step, integers print about 3x faster, and every JSON parser,
	# godot-rl's included, reads the same floats (to 1e-6, as Godot would print them).
	var obs := PoolStringArray()
	var rewards := []
	var dones := []
	var finals := {}
	for i in range(arenas.size()):
		var arena = arenas[i]
		obs.append(_fixed(arena.end_step()))
		rewards.append(arena.reward * 1e6)
		dones.append(arena.done)
		if arena.done:
			finals[str(i)] = {"obs": {"obs": arena.final_obs}, "truncated": true}
	var text := '{"type":"step","obs":[{"obs":[' + obs.join('e-6]},{"obs":[') + 'e-6]}]'
	text += ',"reward":[' + _fixed(rewards) + 'e-6],"done":' + JSON.print(dones)
	if not finals.empty():
		text += ',"final_obs":' + JSON.print(finals)
	codec_usec += OS.get_ticks_usec() - t0
	_send_text(text + ',"tick_us":%d,"codec_us":%d}' % [tick_usec, codec_usec])


# Values already scaled by 1e6 -> "v1e-6,v2e-6,...,vn" (the caller adds the last "e-6").
static func _fixed(values: Array) -> String:
	return PoolStringArray(Array(PoolIntArray(values))).join("e-6,")


func _send(msg: Dictionary) -> void:
	_send_text(JSON.print(msg))


func _send_text(text: String) -> void:
	var body := text.to_utf8()
	var n := body.size()
	# One write per message (length prefix included): no small packet waits on a delayed ACK.
	var out := PoolByteArray([n & 255, (n >> 8) & 255, (n >> 16) & 255, (n >> 24) & 255])
	out.append_array(body)
	stream.put_data(out)


func _inject_fault() -> void:
	if fault_kind == "crash":
		printerr("ballchase: injected crash at step %d" % agent_steps)
		OS.kill(OS.get_process_id())
	elif fault_kind == "hang":
		printerr("ballchase: injected hang at step %d" % agent_steps)
		OS.delay_msec(3600 * 1000)


func _quit(code: int) -> void:
	closing = true
	get_tree().quit(code)
